use std::collections::BTreeMap;

use super::*;

fn params(custom: &[String]) -> MonitorConfParams<'_> {
    MonitorConfParams {
        process_class: ProcessClass::Storage,
        servers_per_pod: 1,
        log_group: "sample",
        tls: false,
        dual_listen: false,
        peer_verification_rules: None,
        explicit_listen_address: true,
        dns_locality: false,
        data_center: None,
        data_hall: None,
        custom_parameters: custom,
        ip_family: None,
    }
}

fn env() -> BTreeMap<String, String> {
    [
        ("FDB_PUBLIC_IP", "10.1.2.3"),
        ("FDB_POD_IP", "10.1.2.3"),
        ("FDB_INSTANCE_ID", "storage-1"),
        ("FDB_MACHINE_ID", "node-a"),
        ("FDB_ZONE_ID", "node-a"),
        ("BINARY_DIR", "/usr/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

#[test]
fn the_command_line_is_the_binary_then_the_arguments_in_order() {
    let custom = vec!["knob_disable_posix_kernel_aio=1".to_owned()];
    let config = build_process_configuration(&params(&custom), "7.1.57", true);
    assert_eq!(
        config.command_line(2, &env()).unwrap(),
        "/usr/bin/fdbserver --cluster_file=/var/fdb/data/fdb.cluster \
         --seed_cluster_file=/var/dynamic-conf/fdb.cluster --public_address=[10.1.2.3]:4503 \
         --class=storage --logdir=/var/log/fdb-trace-logs --loggroup=sample \
         --datadir=/var/fdb/data/2 --locality_process_id=storage-1-2 \
         --locality_instance_id=storage-1 --locality_machineid=node-a --locality_zoneid=node-a \
         --listen_address=[10.1.2.3]:4503 --knob_disable_posix_kernel_aio=1"
    );
    assert_eq!(
        config.environment_names(),
        [
            "FDB_PUBLIC_IP",
            "FDB_INSTANCE_ID",
            "FDB_MACHINE_ID",
            "FDB_ZONE_ID",
            "FDB_POD_IP"
        ]
    );
}

#[test]
fn the_json_has_the_monitors_shape_and_reads_back() {
    let config = build_process_configuration(&params(&[]), "7.1.57", false);
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(json["version"], "7.1.57");
    assert_eq!(json["runServers"], false);
    assert_eq!(
        json["arguments"][2],
        serde_json::json!({"type": "Concatenate", "values": [
            {"value": "--public_address=["},
            {"type": "Environment", "source": "FDB_PUBLIC_IP"},
            {"value": "]:"},
            {"type": "ProcessNumber", "multiplier": 2, "offset": 4499}
        ]})
    );
    let back: ProcessConfiguration = serde_json::from_value(json).unwrap();
    assert_eq!(back, config);
    let running = build_process_configuration(&params(&[]), "7.1.57", true);
    assert!(
        serde_json::to_value(&running)
            .unwrap()
            .get("runServers")
            .is_none()
    );
    assert!(running.runs_servers());
}

#[test]
fn user_values_stay_values() {
    // A value that would add a line to an fdbmonitor conf is one JSON string here.
    let custom = vec![
        "knob_x=a\n[fdbserver.9]".to_owned(),
        "locality_rack=$RACK".to_owned(),
    ];
    let config = build_process_configuration(&params(&custom), "7.1.57", true);
    let mut with_rack = env();
    with_rack.insert("RACK".into(), "r1".into());
    let args = config.generate_arguments(1, &with_rack).unwrap();
    assert!(args.contains(&"--knob_x=a\n[fdbserver.9]".to_owned()));
    assert!(args.contains(&"--locality_rack=r1".to_owned()));
    assert_eq!(
        config.generate_arguments(1, &env()),
        Err(ArgumentError::MissingEnvironment("RACK".into()))
    );
}

#[test]
fn tls_ports_and_ip_lists() {
    let mut tls = params(&[]);
    tls.tls = true;
    let config = build_process_configuration(&tls, "7.1.57", true);
    let args = config.generate_arguments(1, &env()).unwrap();
    assert!(
        args.contains(&"--public_address=[10.1.2.3]:4500:tls".to_owned()),
        "{args:?}"
    );
    let list = Argument {
        argument_type: Some(ArgumentType::IPList),
        source: "IPS".into(),
        ip_family: 6,
        ..Argument::default()
    };
    let ips: BTreeMap<String, String> = [("IPS".to_owned(), "10.0.0.1,fd00::1".to_owned())].into();
    assert_eq!(list.generate(1, &ips).unwrap(), "fd00::1");
}

#[test]
fn while_tls_changes_unified_processes_listen_on_both_addresses_tls_first() {
    let mut both = params(&[]);
    both.dual_listen = true;
    let config = build_process_configuration(&both, "7.1.57", true);
    let args = config.generate_arguments(2, &env()).unwrap();
    for wanted in [
        "--public_address=[10.1.2.3]:4502:tls,[10.1.2.3]:4503",
        "--listen_address=[10.1.2.3]:4502:tls,[10.1.2.3]:4503",
    ] {
        assert!(args.contains(&wanted.to_owned()), "{wanted} in {args:?}");
    }
}

#[test]
fn keys_name_their_class() {
    let key = process_config_key(ProcessClass::Log);
    assert_eq!(key, "fdbmonitor-conf-log-json");
    assert_eq!(class_of_process_config_key(&key), Some(ProcessClass::Log));
    assert_eq!(class_of_process_config_key("fdbmonitor-conf-log"), None);
}

#[test]
fn an_ip_family_picks_the_address_of_that_family_from_the_pod_ips() {
    let custom = vec!["locality_public=$FDB_PUBLIC_IP".to_owned()];
    let mut six = params(&custom);
    six.ip_family = Some(6);
    let config = build_process_configuration(&six, "7.1.57", true);
    let mut env = env();
    env.insert("FDB_PUBLIC_IP".into(), "10.1.2.3,fd00::1:2".into());
    env.insert("FDB_POD_IP".into(), "10.1.2.3,fd00::1:2".into());
    let arguments = config.generate_arguments(1, &env).unwrap();
    assert!(arguments.contains(&"--public_address=[fd00::1:2]:4501".to_owned()));
    assert!(arguments.contains(&"--listen_address=[fd00::1:2]:4501".to_owned()));
    assert!(arguments.contains(&"--locality_public=fd00::1:2".to_owned()));
    // Without the family the variable is used as it is (the pod's `status.podIP`).
    let plain = build_process_configuration(&params(&custom), "7.1.57", true);
    let arguments = plain.generate_arguments(1, &self::env()).unwrap();
    assert!(arguments.contains(&"--public_address=[10.1.2.3]:4501".to_owned()));
}
