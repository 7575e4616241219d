//! `world.operatorFlags`: flags of `fdb-operator run` the simulated operator runs with,
//! parsed by the same definitions as the binary's, so a scenario states them exactly as
//! a user passes them.

use clap::Parser;
use fdb_operator::cli::pod_template_args::PodTemplatePolicyArgs;
use fdb_operator::controller::OperatorSettings;

/// The `run` flags that change what a pass decides (the others are about the process:
/// addresses, tools, leader election).
#[derive(Debug, Clone, Parser)]
#[command(
    name = "world.operatorFlags",
    no_binary_name = true,
    disable_help_flag = true
)]
pub struct OperatorFlags {
    /// `--restrict-pod-templates` and its `--allow*` flags.
    #[command(flatten)]
    pub pod_templates: PodTemplatePolicyArgs,
    /// `--replace-on-security-context-change`.
    #[arg(long)]
    pub replace_on_security_context_change: bool,
}

impl OperatorFlags {
    /// Parses the flags; the error is clap's, naming the flag.
    pub fn parse_flags(flags: &[String]) -> Result<Self, String> {
        Self::try_parse_from(flags).map_err(|error| error.to_string().trim().to_owned())
    }

    /// Sets what the flags ask for in `settings`.
    pub fn apply(&self, settings: &mut OperatorSettings) {
        settings.pod_template_policy = self.pod_templates.policy();
        settings.replace_on_security_context_change = self.replace_on_security_context_change;
    }
}

/// Sets what `world.operatorFlags` asks for in the settings of an operator instance.
/// The flags were validated with the scenario, so a parse failure here cannot happen;
/// were it to, the instance keeps the defaults of `run` without flags.
pub fn apply_operator_flags(world: &super::WorldSettings, settings: &mut OperatorSettings) {
    if let Ok(flags) = OperatorFlags::parse_flags(&world.operator_flags) {
        flags.apply(settings);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn flags_set_the_operator_settings_as_run_does() {
        let parsed =
            OperatorFlags::parse_flags(&flags(&["--restrict-pod-templates", "--allow-host-pid"]))
                .unwrap();
        let mut settings = OperatorSettings::default();
        parsed.apply(&mut settings);
        let restrictions = settings.pod_template_policy.restrictions.unwrap();
        assert!(restrictions.allow_host_pid && !restrictions.allow_host_network);
    }

    #[test]
    fn an_unknown_flag_is_named() {
        let error = OperatorFlags::parse_flags(&flags(&["--metrics-address", "x"])).unwrap_err();
        assert!(error.contains("--metrics-address"), "{error}");
    }
}
