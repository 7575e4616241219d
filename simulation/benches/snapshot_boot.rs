//! The boot of a 1000-process-group snapshot: the quickstart cluster is run and captured,
//! its storage group is copied to 1000 groups (pods, PVCs, process group statuses and
//! `status json` processes, each with its own IP), and the boot of a scenario starting
//! from that capture (reading the files, checking them, restoring the objects, starting
//! every pod with its sidecar, seeding the database) is timed.
//!
//! Run with `cargo bench -p fdb-simulation --bench snapshot_boot`. The last line is
//! `snapshot-boot: groups=.. objects=.. boot_ms=.. boot_user_ms=.. boot_system_ms=..`:
//! the boot's wall time and the process's CPU time during the boot (user and system:
//! a busy machine stretches the wall time, not these). `SNAPSHOT_BOOT_GROUPS=n` copies
//! the storage group to n groups instead of 1000 (a debug run of a smaller boot).

use std::error::Error;
use std::path::Path;
use std::time::Instant;

use fdb_simulation::runner::{RunOptions, Runner};
use fdb_simulation::scenario::Scenario;
use serde_json::Value;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

type BenchResult<T> = Result<T, Box<dyn Error>>;

const GROUPS: usize = 1000;

/// The process groups of the snapshot: `SNAPSHOT_BOOT_GROUPS`, else [`GROUPS`].
fn groups() -> usize {
    std::env::var("SNAPSHOT_BOOT_GROUPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(GROUPS)
}

/// The process's user and system CPU time so far, in milliseconds (`/proc/self/stat`,
/// in clock ticks of 10 ms).
fn cpu_ms() -> BenchResult<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command name (which may hold spaces) in parentheses.
    let rest = stat.rsplit_once(')').ok_or("/proc/self/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> BenchResult<u64> {
        Ok(fields.get(i).ok_or("/proc/self/stat")?.parse::<u64>()? * 10)
    };
    // utime and stime are the 14th and 15th fields; `rest` starts at the 3rd.
    Ok((ticks(11)?, ticks(12)?))
}

/// The quickstart at its end: objects and `status json`.
async fn capture_quickstart() -> BenchResult<(Vec<Value>, Value)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/quickstart.yaml");
    let scenario = Scenario::from_file(&path)?;
    let runner = Runner::new(scenario, RunOptions::default()).await?;
    let (_, captured) = runner
        .run_then(|api, fdb| async move {
            let mut objects = api.list("", "nodes", None);
            for (group, plural) in [
                ("", "configmaps"),
                ("", "secrets"),
                ("", "services"),
                ("", "persistentvolumeclaims"),
                ("apps.foundationdb.org", "foundationdbclusters"),
                ("", "pods"),
            ] {
                objects.extend(api.list(group, plural, Some("default")));
            }
            (objects, fdb.render_status_json())
        })
        .await?;
    Ok(captured)
}

fn renamed(value: &Value, from: &[(&str, &str)]) -> BenchResult<Value> {
    let mut text = serde_json::to_string(value)?;
    for (old, new) in from {
        text = text.replace(old, new);
    }
    Ok(serde_json::from_str(&text)?)
}

/// Copies the `storage-1` group to `storage-5..` until there are `groups` groups.
fn scale(objects: &mut Vec<Value>, status: &mut Value, groups: usize) -> BenchResult<()> {
    let find = |objects: &[Value], kind: &str, name: &str| {
        objects
            .iter()
            .position(|o| o["kind"] == kind && o["metadata"]["name"] == name)
            .ok_or(format!("no {kind} {name}"))
    };
    let pod = objects[find(objects, "Pod", "sample-storage-1")?].clone();
    let pvc = objects[find(objects, "PersistentVolumeClaim", "sample-storage-1-data")?].clone();
    let ip = pod["status"]["podIP"].as_str().ok_or("pod IP")?.to_owned();
    let processes = status["cluster"]["processes"]
        .as_object()
        .ok_or("processes")?
        .clone();
    let (process_id, process) = processes
        .iter()
        .find(|(_, p)| {
            p["address"]
                .as_str()
                .is_some_and(|a| a.starts_with(&format!("{ip}:")))
        })
        .ok_or("storage-1's process")?;
    let cluster_index = objects
        .iter()
        .position(|o| o["kind"] == "FoundationDBCluster")
        .ok_or("cluster")?;
    let statuses = objects[cluster_index]["status"]["processGroups"]
        .as_array()
        .ok_or("process groups")?
        .clone();
    let group = statuses
        .iter()
        .find(|g| g["processGroupID"] == "storage-1")
        .ok_or("storage-1's status")?
        .clone();
    let existing = statuses.len();
    let mut new_groups = statuses;
    for n in 5..(5 + groups.saturating_sub(existing)) {
        let new_ip = format!("10.{}.{}.{}", 100 + n / 65536, (n / 256) % 256, n % 256);
        let names = [
            ("\"storage-1\"", format!("\"storage-{n}\"")),
            ("sample-storage-1\"", format!("sample-storage-{n}\"")),
            ("sample-storage-1-", format!("sample-storage-{n}-")),
            ("storage-1-", format!("storage-{n}-")),
            (ip.as_str(), new_ip.clone()),
        ];
        let names: Vec<(&str, &str)> = names.iter().map(|(a, b)| (*a, b.as_str())).collect();
        let mut new_pod = renamed(&pod, &names)?;
        if let Some(metadata) = new_pod["metadata"].as_object_mut() {
            metadata.remove("uid");
        }
        let mut new_pvc = renamed(&pvc, &names)?;
        if let Some(metadata) = new_pvc["metadata"].as_object_mut() {
            metadata.remove("uid");
        }
        objects.push(new_pod);
        objects.push(new_pvc);
        new_groups.push(renamed(&group, &names)?);
        status["cluster"]["processes"][format!("{process_id}{n}")] = renamed(process, &names)?;
    }
    objects[cluster_index]["status"]["processGroups"] = Value::Array(new_groups);
    Ok(())
}

fn main() -> BenchResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let (mut objects, mut status) = runtime.block_on(capture_quickstart())?;
    let groups = groups();
    scale(&mut objects, &mut status, groups)?;
    let dir = tempfile::tempdir()?;
    let stream: String = objects
        .iter()
        .map(|o| serde_json::to_string(o).map(|t| format!("---\n{t}\n")))
        .collect::<Result<_, _>>()?;
    std::fs::write(dir.path().join("live.yaml"), stream)?;
    std::fs::write(dir.path().join("status.json"), status.to_string())?;
    let path = dir.path().join("scenario.yaml");
    std::fs::write(
        &path,
        "name: boot\nsnapshot: {objects: live.yaml, status: status.json}\nsteps:\n  - reconcile: {}\n",
    )?;
    let started = Instant::now();
    let cpu_before = cpu_ms()?;
    let scenario = Scenario::from_file(&path)?;
    let runner = runtime.block_on(Runner::new(scenario, RunOptions::default()))?;
    let boot = started.elapsed();
    let cpu_after = cpu_ms()?;
    drop(runner);
    println!(
        "snapshot-boot: groups={groups} objects={} boot_ms={} boot_user_ms={} boot_system_ms={}",
        objects.len(),
        boot.as_millis(),
        cpu_after.0.saturating_sub(cpu_before.0),
        cpu_after.1.saturating_sub(cpu_before.1),
    );
    Ok(())
}
