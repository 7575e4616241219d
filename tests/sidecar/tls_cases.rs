//! TLS black-box tests: approved, rejected and missing client certificates, peer rules,
//! and certificate reload.

use std::net::SocketAddr;
use std::sync::Arc;

use fdb_shared::sidecar::{SidecarApi, SidecarClientFactory, SidecarClientTls};
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::support::certs::{Ca, Leaf, TlsFiles, client_config, forged_ca_pem};
use crate::support::{Answer, PodDirs, SidecarProcess, eventually, pod_env, raw_request};

async fn https(
    addr: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    method: &str,
    path: &str,
) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let tls = TlsConnector::from(config)
        .connect(ServerName::try_from("sidecar").expect("name"), stream)
        .await
        .expect("handshake");
    raw_request(tls, method, path).await
}

/// Common name of the certificate the server presents.
async fn server_cert_subject(addr: SocketAddr, config: Arc<rustls::ClientConfig>) -> String {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let tls = TlsConnector::from(config)
        .connect(ServerName::try_from("sidecar").expect("name"), stream)
        .await
        .expect("handshake");
    let der = tls.get_ref().1.peer_certificates().expect("server cert")[0].clone();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).expect("parse");
    cert.subject().to_string()
}

struct TlsPod {
    dirs: PodDirs,
    ca: Ca,
    files: TlsFiles,
    sidecar: SidecarProcess,
}

fn start(rules: Option<&str>) -> TlsPod {
    let dirs = PodDirs::new();
    let ca = Ca::new("Test Root CA");
    let files = TlsFiles::write(dirs.root.path(), &ca, "sidecar-v1");
    let mut args = dirs.pod_args();
    args.extend(files.args(rules));
    let sidecar = SidecarProcess::start(args, &pod_env());
    TlsPod {
        dirs,
        ca,
        files,
        sidecar,
    }
}

#[tokio::test]
async fn client_certificates_are_approved_rejected_or_missing() {
    let pod = start(Some("S.CN=fdb-operator,I.CN=Test Root CA;R.O=Other"));
    let addr = pod.sidecar.addr;
    let approved = pod.ca.issue("fdb-operator", &[], false);
    let wrong_cn = pod.ca.issue("intruder", &[], false);
    let other_ca = Ca::new("Other CA");
    let foreign = other_ca.issue("fdb-operator", &[], false);

    let with_approved = client_config(&pod.ca.pem, Some(&approved));
    let answer = https(
        addr,
        with_approved.clone(),
        "GET",
        "/check_hash/fdb.cluster",
    )
    .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        https(addr, with_approved.clone(), "POST", "/copy_files")
            .await
            .status,
        200
    );
    assert_eq!(
        https(addr, with_approved, "POST", "/refresh_certs")
            .await
            .body,
        "OK\n"
    );

    for (name, leaf) in [
        ("no certificate", None),
        ("rules not matched", Some(&wrong_cn)),
        ("other CA", Some(&foreign)),
    ] {
        let config = client_config(&pod.ca.pem, leaf);
        let ready = https(addr, config.clone(), "GET", "/ready").await;
        assert_eq!((ready.status, ready.body.as_str()), (200, "OK\n"), "{name}");
        for (method, path) in [
            ("GET", "/substitutions"),
            ("GET", "/check_hash/fdb.cluster"),
            ("POST", "/copy_files"),
            ("GET", "/nope"),
        ] {
            let answer = https(addr, config.clone(), method, path).await;
            assert_eq!(
                (answer.status, answer.body.as_str()),
                (401, "Client certificate was not approved"),
                "{name} {path}"
            );
        }
    }
}

#[tokio::test]
async fn empty_rules_accept_any_certificate_from_the_ca_and_the_shared_client_works() {
    let pod = start(None);
    let client_leaf = pod.ca.issue("anyone", &[], false);
    let cert_file = pod.dirs.path("client.crt");
    let key_file = pod.dirs.path("client.key");
    std::fs::write(&cert_file, &client_leaf.cert_pem).unwrap();
    std::fs::write(&key_file, &client_leaf.key_pem).unwrap();
    let tls = SidecarClientTls {
        ca_file: pod.files.ca.clone(),
        client_certificate: Some((cert_file, key_file)),
        skip_server_verification: false,
    };
    // The server certificate has no IP SAN; the client verifies the CA only.
    let base = format!("https://{}", pod.sidecar.addr);
    let client = SidecarClientFactory::new(Some(&tls))
        .unwrap()
        .client(&base)
        .unwrap();
    assert_eq!(
        client.substitutions().await.unwrap()["FDB_INSTANCE_ID"],
        "storage-1"
    );
    assert!(client.check_hash("fdb.cluster").await.unwrap().is_some());

    let anonymous = SidecarClientFactory::new(Some(&SidecarClientTls {
        ca_file: pod.files.ca.clone(),
        client_certificate: None,
        skip_server_verification: false,
    }))
    .unwrap()
    .client(&base)
    .unwrap();
    anonymous.ready().await.unwrap();
    let err = anonymous.copy_files().await.unwrap_err();
    assert_eq!(err.status(), Some(401), "{err}");
}

/// `DISABLE_SIDECAR_TLS_CHECK`: a sidecar whose certificate another CA signed is refused,
/// unless the operator skips the server check (its client certificate still counts).
#[tokio::test]
async fn skipping_the_server_check_accepts_a_sidecar_of_another_ca() {
    let pod = start(None);
    let client_leaf = pod.ca.issue("fdb-operator", &[], false);
    let cert_file = pod.dirs.path("op.crt");
    let key_file = pod.dirs.path("op.key");
    let other_ca_file = pod.dirs.path("other-ca.pem");
    std::fs::write(&cert_file, &client_leaf.cert_pem).unwrap();
    std::fs::write(&key_file, &client_leaf.key_pem).unwrap();
    std::fs::write(&other_ca_file, Ca::new("Other CA").pem).unwrap();
    let base = format!("https://{}", pod.sidecar.addr);
    let client = |skip_server_verification| {
        SidecarClientFactory::new(Some(&SidecarClientTls {
            ca_file: other_ca_file.clone(),
            client_certificate: Some((cert_file.clone(), key_file.clone())),
            skip_server_verification,
        }))
        .unwrap()
        .client(&base)
        .unwrap()
    };
    let err = client(false).ready().await.unwrap_err();
    assert!(err.is_unreachable(), "{err}");
    let unchecked = client(true);
    unchecked.ready().await.unwrap();
    assert!(unchecked.check_hash("fdb.cluster").await.unwrap().is_some());
}

#[tokio::test]
async fn certificates_reload_on_refresh_and_on_file_change() {
    let pod = start(None);
    let addr = pod.sidecar.addr;
    let client = pod.ca.issue("op", &[], false);
    let config = client_config(&pod.ca.pem, Some(&client));
    assert!(
        server_cert_subject(addr, config.clone())
            .await
            .contains("sidecar-v1")
    );

    // Refresh after a rotation.
    let rotated: Leaf = pod.ca.issue("sidecar-v2", &["sidecar"], true);
    std::fs::write(&pod.files.key, &rotated.key_pem).unwrap();
    std::fs::write(&pod.files.cert, &rotated.cert_pem).unwrap();
    assert_eq!(
        https(addr, config.clone(), "POST", "/refresh_certs")
            .await
            .status,
        200
    );
    assert!(
        server_cert_subject(addr, config.clone())
            .await
            .contains("sidecar-v2")
    );

    // A change on disk alone is picked up by the watcher.
    let next = pod.ca.issue("sidecar-v3", &["sidecar"], true);
    std::fs::write(&pod.files.key, &next.key_pem).unwrap();
    std::fs::write(&pod.files.cert, &next.cert_pem).unwrap();
    let runtime = tokio::runtime::Handle::current();
    let reloaded = tokio::task::spawn_blocking(move || {
        eventually(5, || {
            runtime
                .block_on(server_cert_subject(addr, config.clone()))
                .contains("sidecar-v3")
        })
    })
    .await
    .unwrap();
    assert!(reloaded, "certificate not reloaded after a file change");
    assert!(pod.sidecar.log_text().contains("reloaded"));
}

#[tokio::test]
async fn root_scope_is_the_verified_trust_anchor_not_a_presented_look_alike() {
    let dirs = PodDirs::new();
    let root_a = Ca::new("Root A");
    let root_b = Ca::new("Root B");
    let files = TlsFiles::write(dirs.root.path(), &root_a, "sidecar-v1");
    let both_roots = format!("{}{}", root_a.pem, root_b.pem);
    std::fs::write(&files.ca, &both_roots).unwrap();
    let mut args = dirs.pod_args();
    args.extend(files.args(Some("R.CN=Root B")));
    let sidecar = SidecarProcess::start(args, &pod_env());
    let addr = sidecar.addr;

    let from_a = root_a.issue("fdb-operator", &[], false);
    let plain = client_config(&both_roots, Some(&from_a));
    let answer = https(addr, plain, "GET", "/substitutions").await;
    assert_eq!(answer.status, 401, "{answer:?}");

    // The same leaf plus a made-up "Root A issued by Root B" certificate: the verified
    // path still ends at Root A, so `R.CN=Root B` must not match.
    let forged = Leaf {
        cert_pem: format!("{}{}", from_a.cert_pem, forged_ca_pem("Root A", "Root B")),
        key_pem: from_a.key_pem.clone(),
    };
    let with_forgery = client_config(&both_roots, Some(&forged));
    let answer = https(addr, with_forgery, "GET", "/substitutions").await;
    assert_eq!(
        (answer.status, answer.body.as_str()),
        (401, "Client certificate was not approved"),
        "{answer:?}"
    );

    // A leaf really issued by Root B is approved.
    let from_b = root_b.issue("fdb-operator", &[], false);
    let genuine = client_config(&both_roots, Some(&from_b));
    let answer = https(addr, genuine, "GET", "/substitutions").await;
    assert_eq!(answer.status, 200, "{answer:?}");
}
