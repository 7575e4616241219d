//! Faults of the database itself: injected admin timeouts, `io_error` messages,
//! processes that survive kills, slow disks, slow recoveries; and connected clients.

use super::SimulatedFdb;
use super::timeline::refresh;
use fdb_operator::fdb::ClientInfo;

impl SimulatedFdb {
    /// Makes that share (0..1) of admin calls time out, deterministically with the seed.
    /// A mutating command that times out may or may not have taken effect (a seeded
    /// coin), as with real fdbcli.
    pub fn set_timeout_rate(&self, rate: f64) {
        self.lock().timeout_rate = rate.clamp(0.0, 1.0);
    }

    /// `ioError`: the processes of that group (`locality_instance_id`) report an
    /// `io_error` message in `status json`, or stop reporting it.
    pub fn set_io_error(&self, instance_id: &str, on: bool) {
        let mut state = self.lock();
        if on {
            state.io_errors.insert(instance_id.to_owned());
        } else {
            state.io_errors.remove(instance_id);
        }
    }

    /// `storageMetricsMissing`: the storage servers of that group (`locality_instance_id`)
    /// stop answering the cluster controller's metrics requests, or answer again.
    pub fn set_storage_metrics_missing(&self, instance_id: &str, on: bool) {
        let mut state = self.lock();
        if on {
            state.metrics_missing.insert(instance_id.to_owned());
        } else {
            state.metrics_missing.remove(instance_id);
        }
    }

    /// `statusProcessesMissing`: the running processes of that group
    /// (`locality_instance_id`) or of that datacenter (`locality_dcid`) are left out of
    /// `status json`'s `cluster.processes`, or listed again.
    pub fn set_status_processes_missing(&self, group: Option<&str>, dc: Option<&str>, on: bool) {
        let mut state = self.lock();
        let hidden = &mut state.status_hidden;
        for (set, key) in [(&mut hidden.groups, group), (&mut hidden.data_centers, dc)] {
            if let Some(key) = key {
                if on {
                    set.insert(key.to_owned());
                } else {
                    set.remove(key);
                }
            }
        }
    }

    /// `ignoreKill`: the processes of that group survive kill commands (the kill never
    /// reaches them; the command still succeeds), or no longer do.
    pub fn set_ignore_kill(&self, instance_id: &str, on: bool) {
        let mut state = self.lock();
        if on {
            state.ignore_kill.insert(instance_id.to_owned());
        } else {
            state.ignore_kill.remove(instance_id);
        }
    }

    /// `ioLatency`: the disks of that group (`locality_instance_id`) take `milliseconds`
    /// per I/O (data moves off them at a tenth of the rate, and `status json` reports
    /// their processes degraded), or are fast again with `None`.
    pub fn set_io_latency(&self, instance_id: &str, milliseconds: Option<u64>) {
        let now = self.now();
        // Data moved so far moved at the old rate.
        let mut state = self.caught_up();
        match milliseconds {
            Some(ms) => state.io_latency.insert(instance_id.to_owned(), ms),
            None => state.io_latency.remove(instance_id),
        };
        refresh(&mut state, now);
    }

    /// `slowRecovery`: recoveries take `seconds` (also the one running) until cleared
    /// with `None`.
    pub fn set_recovery_override(&self, seconds: Option<u64>) {
        let now = self.now();
        let mut state = self.caught_up();
        state.recovery_override = seconds;
        // A running recovery may be over under the shorter duration.
        refresh(&mut state, now);
    }

    /// Clears the group's `io_error`, `storageMetricsMissing`, `statusProcessesMissing`,
    /// `ignoreKill` and `ioLatency` faults.
    pub fn heal_group(&self, instance_id: &str) {
        let now = self.now();
        let mut state = self.caught_up();
        state.io_errors.remove(instance_id);
        state.metrics_missing.remove(instance_id);
        state.status_hidden.groups.remove(instance_id);
        state.ignore_kill.remove(instance_id);
        state.io_latency.remove(instance_id);
        refresh(&mut state, now);
    }

    /// Clears every database fault: `io_error`, `storageMetricsMissing`,
    /// `statusProcessesMissing`, `ignoreKill`, `ioLatency`, the recovery
    /// override and the timeout rate.
    pub fn heal_all(&self) {
        let now = self.now();
        let mut state = self.caught_up();
        state.io_errors.clear();
        state.metrics_missing.clear();
        state.status_hidden = Default::default();
        state.ignore_kill.clear();
        state.io_latency.clear();
        state.recovery_override = None;
        state.timeout_rate = 0.0;
        refresh(&mut state, now);
    }

    /// Connects a client (shown in `cluster.clients`).
    pub fn connect_client(&self, client: ClientInfo) {
        let mut state = self.lock();
        if !state.clients.contains(&client) {
            state.clients.push(client);
            state.clients.sort();
        }
    }

    /// Disconnects every client entry with that address.
    pub fn disconnect_client(&self, address: &str) {
        self.lock().clients.retain(|c| c.address != address);
    }
}
