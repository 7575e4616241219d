//! The same scenario and seed give the same result JSON (apart from `metrics.wallMillis`)
//! with the machine idle and with both cores kept busy: nothing simulated waits on real
//! time (the operator's sidecar requests, the sidecars' copies, ConfigMap projection).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fdb_e2e_tests::run;
use fdb_simulation::result::SimulationResult;

/// Spinning threads per core: the simulation competes for every core.
const BUSY_THREADS_PER_CORE: usize = 1;
/// The busy threads stop by themselves after this long, whatever happens to the test.
const BUSY_LIMIT: Duration = Duration::from_secs(90);

/// Threads that keep the cores busy until dropped (or [`BUSY_LIMIT`]).
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<u64>>,
}

impl Busy {
    fn start() -> Self {
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let stop = Arc::new(AtomicBool::new(false));
        let deadline = Instant::now() + BUSY_LIMIT;
        let threads = (0..cores * BUSY_THREADS_PER_CORE)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut spins = 0u64;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        for _ in 0..10_000 {
                            spins = std::hint::black_box(spins.wrapping_add(1));
                        }
                    }
                    spins
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// The result as JSON, without its wall-clock field.
fn without_wall_time(mut result: SimulationResult) -> String {
    result.metrics.wall_millis = 0;
    serde_json::to_string_pretty(&result).unwrap()
}

/// Runs `yaml` idle, then with the cores busy, and compares the results.
fn assert_same_result_idle_and_busy(yaml: &str) {
    let idle = without_wall_time(run(yaml, None));
    let busy = {
        let _load = Busy::start();
        without_wall_time(run(yaml, None))
    };
    if idle != busy {
        let line = idle
            .lines()
            .zip(busy.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        let around = |text: &str| -> String {
            text.lines()
                .skip(line.saturating_sub(3))
                .take(10)
                .collect::<Vec<_>>()
                .join("\n")
        };
        panic!(
            "the results differ from line {} on:\nidle:\n{}\nbusy:\n{}",
            line + 1,
            around(&idle),
            around(&busy)
        );
    }
}

fn repo_file(relative: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

#[test]
fn the_quickstart_gives_the_same_result_idle_and_with_both_cores_busy() {
    assert_same_result_idle_and_busy(&repo_file("../docs/examples/quickstart.yaml"));
}

#[test]
fn faults_and_a_new_conf_give_the_same_result_idle_and_with_both_cores_busy() {
    assert_same_result_idle_and_busy(&repo_file("scenarios/determinism/faults.yaml"));
}
