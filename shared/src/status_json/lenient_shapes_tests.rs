use crate::status_json::DatabaseStatus;

/// Parses `processes` (a JSON text) as fdbcli's output and as a value.
fn both_ways(processes: &str) -> [DatabaseStatus; 2] {
    let text = format!(r#"{{"cluster": {{"processes": {processes}, "generation": 7}}}}"#);
    let printed = DatabaseStatus::parse_fdbcli_output(&text).unwrap();
    let value = serde_json::from_str(&text).unwrap();
    let converted = DatabaseStatus::from_json_value(value).unwrap();
    [printed, converted]
}

#[test]
fn a_field_of_another_type_takes_its_default_and_the_process_stays() {
    let processes = r#"{
        "odd": {"command_line": 5, "excluded": "yes", "under_maintenance": [true],
                "uptime_seconds": "long", "fault_domain": {"z": 1}, "locality": [1],
                "roles": [1, {"role": "log", "id": 3}, {"role": ["x"]}],
                "messages": "io_error", "class_source": null},
        "fine": {"command_line": "/usr/bin/fdbserver", "excluded": true,
                 "uptime_seconds": 12, "run_loop_busy": 0.5,
                 "locality": {"instance_id": "storage-1", "zoneid": 9, "rack": "r1"},
                 "roles": [{"role": "storage", "stored_bytes": 3.0}],
                 "messages": [{"name": "io_error", "description": 4}]}
    }"#;
    for status in both_ways(processes) {
        assert_eq!(status.cluster.generation, Some(7), "the document goes on");
        let odd = &status.cluster.processes["odd"];
        assert_eq!(odd.command_line, None);
        assert!(!odd.excluded && !odd.under_maintenance);
        assert_eq!(
            (odd.uptime_seconds, odd.fault_domain.as_ref()),
            (None, None)
        );
        assert_eq!(odd.locality, Default::default());
        // The entry that is not an object is left out; a field of another type is empty.
        let roles: Vec<_> = odd
            .roles
            .iter()
            .map(|r| (r.role.as_str(), r.id.clone()))
            .collect();
        assert_eq!(roles, [("log", None), ("", None)]);
        assert!(odd.messages.is_empty());

        let fine = &status.cluster.processes["fine"];
        assert_eq!(fine.command_line.as_deref(), Some("/usr/bin/fdbserver"));
        assert!(fine.excluded);
        assert_eq!(
            (fine.uptime_seconds, fine.run_loop_busy),
            (Some(12.0), Some(0.5))
        );
        assert_eq!(fine.locality.instance_id.as_deref(), Some("storage-1"));
        assert_eq!(fine.locality.zoneid, None, "a zone that is not a string");
        assert_eq!(
            fine.locality.other["rack"], "r1",
            "unknown localities are kept"
        );
        assert_eq!(
            fine.roles[0].stored_bytes,
            Some(3),
            "a whole real is an integer"
        );
        assert!(fine.has_message("io_error"));
        assert_eq!(fine.messages[0].description, None);
    }
}

#[test]
fn an_entry_that_is_not_an_object_is_left_out() {
    for status in both_ways(r#"{"a": 7, "b": {"excluded": true}, "c": null, "d": [1]}"#) {
        let keys: Vec<_> = status.cluster.processes.keys().collect();
        assert_eq!(keys, ["b"]);
        assert!(status.cluster.processes["b"].excluded);
    }
}

#[test]
fn processes_that_are_not_an_object_are_none() {
    for processes in ["[1, {\"a\": 1}]", "\"x\"", "null", "3", "true"] {
        for status in both_ways(processes) {
            assert!(status.cluster.processes.is_empty(), "{processes}");
            assert_eq!(status.cluster.generation, Some(7), "{processes}");
        }
    }
}

#[test]
fn a_broken_document_still_fails() {
    let text = r#"{"cluster": {"processes": {"a": {"roles": [{"role": "log"}"#;
    assert!(DatabaseStatus::parse_fdbcli_output(text).is_err());
}
