//! Load benchmark of the `fdb-sidecar` binary (not a criterion bench: a small tool that
//! keeps CI compile time low). Run with `cargo bench -p fdb-sidecar --bench load`.
//!
//! Starts the release binary on loopback with temporary directories, drives
//! `/check_hash` with many concurrent keep-alive clients, samples the server's VmRSS from
//! `/proc/<pid>/status`, and prints a table of requests per second, latency percentiles
//! and resident memory.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)] // benchmark tool, not library code

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BIG_FILE_MB: usize = 100;

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(dir: &Path, extra: &[&str]) -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fdb-sidecar"))
        .args(["--version-file", &dir.join("version").display().to_string()])
        .args(["--input-dir", &dir.join("in").display().to_string()])
        .args(["--output-dir", &dir.join("out").display().to_string()])
        .args([
            "--copy-file",
            "fdb.cluster",
            "--bind-address",
            "127.0.0.1:0",
        ])
        .args(extra)
        .env_clear()
        .env("RUST_LOG", "info")
        .envs(std::env::var("MALLOC_ARENA_MAX").map(|v| ("MALLOC_ARENA_MAX", v)))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start fdb-sidecar (build it in release first)");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("address=").nth(1) {
                let _ = tx.send(rest.split_whitespace().next().unwrap_or("").to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("listening line")
        .parse()
        .unwrap();
    Server { child, addr }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

struct Outcome {
    name: String,
    requests: usize,
    seconds: f64,
    latencies_ms: Vec<f64>,
    errors: usize,
    peak_rss_kib: u64,
}

async fn run(name: &str, server: &Server, path: &str, concurrency: usize, total: usize) -> Outcome {
    let pid = server.child.id();
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(rss_kib(pid)));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kib(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let url = format!("http://{}{path}", server.addr);
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..concurrency {
        // One client per task, spread over loopback source addresses: real callers are
        // different pods, and one source address would exhaust its ephemeral ports when
        // the server closes connections under pressure (--max-connections).
        let client = http_client(i);
        let (url, next, errors) = (url.clone(), next.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t = Instant::now();
                match client.get(&url).send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            latencies
        }));
    }
    let mut latencies_ms = Vec::with_capacity(total);
    for task in tasks {
        latencies_ms.extend(task.await.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    latencies_ms.sort_by(f64::total_cmp);
    Outcome {
        name: name.to_owned(),
        requests: latencies_ms.len(),
        seconds,
        latencies_ms,
        errors: errors.load(Ordering::Relaxed),
        peak_rss_kib: peak.load(Ordering::Relaxed),
    }
}

fn http_client(index: usize) -> reqwest::Client {
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    let source = std::net::IpAddr::from([127, 0, 0, 2 + (index % 250) as u8]);
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .no_proxy()
        .local_address(source)
        .timeout(Duration::from_secs(600))
        .build()
        .unwrap()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn print(outcomes: &[Outcome]) {
    println!(
        "| scenario | requests | errors | req/s | p50 ms | p90 ms | p99 ms | max ms | peak RSS MiB |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for o in outcomes {
        let l = &o.latencies_ms;
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} |",
            o.name,
            o.requests,
            o.errors,
            o.requests as f64 / o.seconds,
            percentile(l, 0.5),
            percentile(l, 0.9),
            percentile(l, 0.99),
            l.last().copied().unwrap_or(f64::NAN),
            o.peak_rss_kib as f64 / 1024.0
        );
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["in", "out"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
    }
    std::fs::write(dir.path().join("version"), "7.1.57\n").unwrap();
    std::fs::write(
        dir.path().join("in/fdb.cluster"),
        "bench:abcdefgh@10.1.2.3:4501,10.1.2.4:4501,10.1.2.5:4501",
    )
    .unwrap();
    {
        let mut big = std::io::BufWriter::new(
            std::fs::File::create(dir.path().join("out/fdbserver.bin")).unwrap(),
        );
        let mut block = vec![0u8; 1 << 20];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..BIG_FILE_MB {
            for byte in block.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *byte = x as u8;
            }
            big.write_all(&block).unwrap();
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut outcomes = Vec::new();

    let server = start_server(dir.path(), &[]);
    std::thread::sleep(Duration::from_millis(500));
    let idle = rss_kib(server.child.id());
    runtime.block_on(async {
        outcomes.push(
            run(
                "cluster file, 64 clients",
                &server,
                "/check_hash/fdb.cluster",
                64,
                50_000,
            )
            .await,
        );
        outcomes.push(
            run(
                "cluster file, 1000 clients",
                &server,
                "/check_hash/fdb.cluster",
                1000,
                20_000,
            )
            .await,
        );
        outcomes.push(
            run(
                "100 MB binary, first (cold) hash",
                &server,
                "/check_hash/fdbserver.bin",
                1,
                1,
            )
            .await,
        );
        outcomes.push(
            run(
                "100 MB binary, cached, 1000 clients",
                &server,
                "/check_hash/fdbserver.bin",
                1000,
                20_000,
            )
            .await,
        );
    });
    let after_load = rss_kib(server.child.id());
    drop(server);

    if std::env::var_os("SIDECAR_BENCH_QUICK").is_some() {
        println!(
            "idle RSS: {:.1} MiB; after load: {:.1} MiB",
            idle as f64 / 1024.0,
            after_load as f64 / 1024.0
        );
        print(&outcomes);
        return;
    }
    let uncached = start_server(dir.path(), &["--hash-cache-entries", "0"]);
    let idle_uncached = rss_kib(uncached.child.id());
    runtime.block_on(async {
        outcomes.push(
            run(
                "100 MB binary, no cache, 1000 clients",
                &uncached,
                "/check_hash/fdbserver.bin",
                1000,
                1000,
            )
            .await,
        );
    });
    drop(uncached);

    println!(
        "idle RSS: {:.1} MiB (no-cache server: {:.1} MiB); RSS after the cached runs: {:.1} MiB",
        idle as f64 / 1024.0,
        idle_uncached as f64 / 1024.0,
        after_load as f64 / 1024.0
    );
    print(&outcomes);
}
