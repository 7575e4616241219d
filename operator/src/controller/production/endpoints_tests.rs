//! The endpoints' connection bounds, over real loopback connections.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fdb_bounded_http::limited::{self, ConnectionLimits, Slots};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::*;
use crate::controller::production::metrics::OperatorMetrics;

/// Serves the endpoints on a loopback port within `limits`; the server stops when the
/// returned sender is dropped.
async fn start(limits: ConnectionLimits) -> (SocketAddr, Slots, oneshot::Sender<()>) {
    let listener = limited::listen("127.0.0.1:0".parse().unwrap(), ENDPOINT_BACKLOG).unwrap();
    let address = listener.local_addr().unwrap();
    let app = router(
        Arc::new(OperatorMetrics::default()),
        Arc::new(Health::default()),
    );
    let slots = Slots::new(limits);
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(serve(listener, app, slots.clone(), async {
        let _ = stopped.await;
    }));
    (address, slots, stop)
}

/// `GET /healthz` on a new connection: the status line.
async fn healthz(address: SocketAddr) -> String {
    let mut stream = TcpStream::connect(address).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: operator\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    answer.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_idle_connections_do_not_stop_healthz() {
    let (address, slots, _stop) = start(ENDPOINT_LIMITS).await;
    // Half send nothing, half an unfinished header block (slowloris).
    let mut idle = Vec::new();
    for i in 0..1000 {
        let mut stream = TcpStream::connect(address).await.unwrap();
        if i % 2 == 1 {
            stream
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: operator\r\nX-Slow: ")
                .await
                .unwrap();
        }
        idle.push(stream);
    }
    let started = Instant::now();
    let status = tokio::time::timeout(Duration::from_secs(8), healthz(address))
        .await
        .expect("/healthz must answer despite 1000 idle connections");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(started.elapsed() < Duration::from_secs(8));
    assert!(
        slots.in_use() <= ENDPOINT_LIMITS.max_connections,
        "{} connections served at once",
        slots.in_use()
    );
    // The server reached the health check only by closing idle connections beyond its
    // cap (it accepts in order): at least 1000 - 256 of them were closed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut buffer = [0u8; 16];
    let closed = idle
        .iter()
        .filter(|stream| match stream.try_read(&mut buffer) {
            Ok(n) => n == 0,
            Err(error) => error.kind() != std::io::ErrorKind::WouldBlock,
        })
        .count();
    assert!(
        closed >= 1000 - ENDPOINT_LIMITS.max_connections,
        "only {closed} idle connections were closed"
    );
    drop(idle);
}

#[tokio::test]
async fn a_silent_connection_is_closed_after_the_header_timeout() {
    let limits = ConnectionLimits {
        header_timeout: Duration::from_millis(300),
        ..ENDPOINT_LIMITS
    };
    let (address, _slots, _stop) = start(limits).await;
    let mut silent = TcpStream::connect(address).await.unwrap();
    let mut buffer = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buffer))
        .await
        .expect("an idle connection must be closed by the server");
    // Closed (0 bytes, or a reset), never a request served.
    assert!(read.map_or(true, |n| n == 0 || buffer.starts_with(b"HTTP/1.1 408")));
    // A keep-alive connection left idle after its request is closed too.
    let mut kept = TcpStream::connect(address).await.unwrap();
    kept.write_all(b"GET /healthz HTTP/1.1\r\nHost: operator\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), kept.read_to_end(&mut answer)).await;
    assert!(closed.is_ok(), "the idle keep-alive connection stayed open");
    assert!(answer.starts_with(b"HTTP/1.1 200 OK"));
}
