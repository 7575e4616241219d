//! Checks of `customParameters`: `key=value` lines added to the monitor conf.

/// Monitor conf keys users may not set through custom parameters: the data directory the
/// operator manages, and fdbmonitor's `[general]` keys (they would change how fdbmonitor
/// restarts processes, which the operator decides).
pub const RESERVED_CUSTOM_PARAMETER_KEYS: &[&str] = &[
    "datadir",
    "cluster_file",
    "restart_delay",
    "initial_restart_delay",
    "restart_backoff",
    "restart_delay_reset_interval",
    "disable_lifecycle_logging",
    "delete_envvars",
    "kill_on_configuration_change",
    "user",
    "group",
];

/// A `key=value` custom parameter, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomParameter {
    /// The key, trimmed.
    pub key: String,
    /// The value, trimmed.
    pub value: String,
}

/// Splits `key=value`; `None` when there is no `=` or the key is empty.
pub fn parse_custom_parameter(text: &str) -> Option<CustomParameter> {
    let (key, value) = text.split_once('=')?;
    let key = key.trim();
    (!key.is_empty()).then(|| CustomParameter {
        key: key.to_owned(),
        value: value.trim().to_owned(),
    })
}

/// Errors of a list of custom parameters at `field` (e.g.
/// `spec.processes.general.customParameters`): malformed entries, keys set twice and
/// reserved keys.
pub fn custom_parameter_errors(field: &str, parameters: &[String]) -> Vec<String> {
    let mut errors = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (index, text) in parameters.iter().enumerate() {
        let Some(parameter) = parse_custom_parameter(text) else {
            errors.push(format!(
                "{field}[{index}]: {text:?} is not of the form key=value"
            ));
            continue;
        };
        if RESERVED_CUSTOM_PARAMETER_KEYS.contains(&parameter.key.as_str()) {
            errors.push(format!(
                "{field}[{index}]: {:?} is managed by the operator and cannot be set as a custom parameter",
                parameter.key
            ));
        }
        if seen.contains(&parameter.key) {
            errors.push(format!(
                "{field}[{index}]: {:?} is set more than once",
                parameter.key
            ));
        } else {
            seen.push(parameter.key);
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_duplicate_and_reserved_parameters_are_errors() {
        let parameters: Vec<String> = [
            "knob_a=1",
            "knob_a = 2",
            "datadir=/tmp",
            "restart_delay=5",
            "no-equals",
            "=x",
            "knob_b=3",
        ]
        .map(str::to_owned)
        .to_vec();
        let errors =
            custom_parameter_errors("spec.processes.general.customParameters", &parameters);
        assert_eq!(
            errors,
            [
                "spec.processes.general.customParameters[1]: \"knob_a\" is set more than once",
                "spec.processes.general.customParameters[2]: \"datadir\" is managed by the operator and cannot be set as a custom parameter",
                "spec.processes.general.customParameters[3]: \"restart_delay\" is managed by the operator and cannot be set as a custom parameter",
                "spec.processes.general.customParameters[4]: \"no-equals\" is not of the form key=value",
                "spec.processes.general.customParameters[5]: \"=x\" is not of the form key=value",
            ]
        );
        assert!(custom_parameter_errors("f", &["knob_x=1".to_owned()]).is_empty());
    }
}
