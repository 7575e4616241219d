//! The command line, with the commands and flags of the Go operator's plugin.

use std::path::PathBuf;

use clap::{ArgAction, Args, Parser, Subcommand};

use crate::names;

/// kubectl plugin for FoundationDB clusters managed by the FoundationDB operator.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-fdb",
    version,
    about = "kubectl plugin for FoundationDB clusters managed by the FoundationDB operator",
    after_help = "Examples:\n  kubectl fdb analyze sample\n  \
        kubectl fdb remove process-groups -c sample sample-storage-1\n  \
        kubectl fdb -n db get configuration sample\n\n\
        Exit status: 0 done, 1 a problem was found (analyze) or the action was declined, \
        2 bad usage, a missing object or an unreachable API."
)]
pub struct Cli {
    /// The kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The namespace (default: the context's).
    #[arg(long, short = 'n', global = true, value_name = "NS", value_parser = names::label_name)]
    pub namespace: Option<String>,
    /// Act without asking for confirmation.
    #[arg(long, short = 'y', global = true)]
    pub yes: bool,
    /// Ask for confirmation before acting (the Go plugin's flag; `--wait=false` is `--yes`).
    #[arg(long, short = 'w', global = true, action = ArgAction::Set, default_value_t = true,
          num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub wait: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the plugin's, the Kubernetes API's and the operator's versions.
    Version(VersionArgs),
    /// Report what is wrong with clusters: health, reconciliation, process group
    /// conditions, pods, fault domains, coordinators and exclusions.
    Analyze(AnalyzeArgs),
    /// Remove things from a cluster.
    #[command(subcommand)]
    Remove(RemoveCommand),
    /// Replace every process group of a cluster running on the given nodes.
    Cordon(CordonArgs),
    /// Restart the fdbserver processes of process groups, all with one `fdbcli kill`.
    Restart(RestartArgs),
    /// Run a command in a pod of the cluster (container `foundationdb`), e.g. fdbcli, with
    /// standard input attached; from a terminal the command gets one (fdbcli's prompt), as
    /// with the Go plugin: `kubectl fdb exec -c C -- fdbcli`, `echo status | kubectl fdb
    /// exec -c C -- fdbcli`.
    Exec(ExecArgs),
    /// Inject faults through the cluster's `spec.buggify`.
    #[command(subcommand)]
    Buggify(BuggifyCommand),
    /// Update the coordinators' addresses in the connection string to their pods' current
    /// IPs: rewrite the cluster file and restart fdbserver in every running pod, then set
    /// it in the cluster's status and ConfigMap (asks first unless --yes).
    FixCoordinatorIps(FixCoordinatorIpsArgs),
    /// Recover a multi-region cluster if a majority of coordinators is lost permanently:
    /// force the database to recover into this cluster's datacenter (spec.dataCenter),
    /// with new coordinators holding a copy of a surviving coordinator's state. Commits
    /// this datacenter had not received are LOST. Asks twice unless --wait=false/--yes.
    #[command(after_help = "Examples:
  # Recover the multi-region cluster \"sample-cluster-1\" in the current Namespace
  kubectl fdb recover-multi-region-cluster sample-cluster-1

  # Recover the multi-region cluster \"sample-cluster-1\" in the \"testing\" Namespace
  kubectl fdb recover-multi-region-cluster -n testing sample-cluster-1")]
    RecoverMultiRegionCluster(RecoverMultiRegionClusterArgs),
    /// Read a cluster's configuration or exclusions.
    #[command(subcommand)]
    Get(GetCommand),
    /// Check clusters for deprecated settings; shows a diff against the normalized spec
    /// (exit 1 when any cluster has deprecations).
    Deprecation(DeprecationArgs),
    /// Change what the operator keeps about a cluster, in an emergency.
    #[command(subcommand)]
    Update(UpdateCommand),
    /// Capture the cluster (its objects, and `status json` through fdbcli in a pod) into a
    /// scenario folder that `fdb-operator simulate` runs; writes nothing to the cluster.
    #[command(after_help = "Example:\n  kubectl fdb snapshot -c sample -o sample-snapshot")]
    Snapshot(SnapshotArgs),
    /// Capture the cluster and simulate applying a changed manifest on it, on this machine:
    /// tells what the operator would do (pods deleted, processes killed, exclusions...)
    /// and whether the change ends reconciled; writes nothing to the cluster. Exit 1 when
    /// it does not.
    #[command(after_help = "Example:\n  kubectl fdb rehearse -c sample -f sample-7.3.yaml")]
    Rehearse(RehearseArgs),
}

/// `snapshot`.
#[derive(Debug, Args)]
pub struct SnapshotArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// The folder to write `scenario.yaml`, `live.yaml` and `status.json` to (default:
    /// `<cluster>-snapshot`).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Keep the values of the Secrets the pods mount (default: placeholders).
    #[arg(long)]
    pub include_secret_values: bool,
    /// Write into a non-empty output folder (the snapshot's own files are replaced; no
    /// symlink in it is followed).
    #[arg(long)]
    pub force: bool,
}

/// `rehearse`.
#[derive(Debug, Args)]
pub struct RehearseArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// The changed FoundationDBCluster manifest to rehearse.
    #[arg(long, short = 'f', value_name = "MANIFEST")]
    pub file: PathBuf,
    /// The folder for the scenario and its `result.json` (default: `<cluster>-rehearsal`).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Write into a non-empty output folder (the rehearsal's own files are replaced).
    #[arg(long)]
    pub force: bool,
}

/// `version`.
#[derive(Debug, Args)]
pub struct VersionArgs {
    /// Print only the plugin's version.
    #[arg(long)]
    pub client_only: bool,
    /// The name of the operator's Deployment.
    #[arg(
        long,
        short = 'o',
        default_value = "fdb-kubernetes-operator-controller-manager",
        value_parser = names::object_name
    )]
    pub operator_name: String,
}

/// `analyze`.
#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// The clusters to analyze.
    #[arg(value_parser = names::object_name)]
    pub clusters: Vec<String>,
    /// Replace the process groups whose pods failed (marks them for removal).
    #[arg(long)]
    pub auto_fix: bool,
    /// Analyze every cluster of the namespace.
    #[arg(long)]
    pub all_clusters: bool,
    /// A process group condition not to report (repeatable).
    #[arg(long, value_name = "CONDITION", value_parser = names::condition)]
    pub ignore_condition: Vec<String>,
    /// Do not report process groups marked for removal.
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub ignore_removals: bool,
    /// Print no colors (by default findings are green, yellow or red on a terminal,
    /// unless NO_COLOR is set).
    #[arg(long)]
    pub no_color: bool,
}

/// The cluster of a command that selects process groups, as the Go plugin's selection
/// flags choose it.
#[derive(Debug, Args)]
pub struct ClusterChoice {
    /// The cluster. Without it, name pods: each pod's `--cluster-label` label names its
    /// cluster (pods of several clusters in one command).
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: Option<String>,
    /// Without `-c`: the pod label that names each named pod's cluster.
    #[arg(long, short = 'l', value_name = "LABEL", default_value = "foundationdb.org/fdb-cluster-name",
          value_parser = names::label_key)]
    pub cluster_label: String,
    /// Also select the cluster's pods that carry every one of these labels
    /// (`key=value,...`; needs `-c`).
    #[arg(long, value_name = "KEY=VALUE,...", value_parser = names::match_labels)]
    pub match_labels: Option<names::MatchLabels>,
}

/// `remove ...`.
#[derive(Debug, Subcommand)]
pub enum RemoveCommand {
    /// Mark process groups (given by pod name or process group ID) for removal: the
    /// operator excludes them, replaces them and then deletes their resources.
    #[command(name = "process-groups", alias = "process-group")]
    ProcessGroups(RemoveArgs),
}

/// `remove process-groups`.
#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The cluster (`-c`), or each named pod's (`-l`).
    #[command(flatten)]
    pub choice: ClusterChoice,
    /// Pod names or process group IDs.
    #[arg(value_parser = names::process_group_or_pod)]
    pub names: Vec<String>,
    /// Exclude the processes before removing them (`--exclusion=false` removes without
    /// exclusion: their data is not moved away first).
    #[arg(long, short = 'e', action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub exclusion: bool,
    /// Also remove every process group with a failure condition.
    #[arg(long)]
    pub remove_all_failed: bool,
    /// Select every process group of this process class.
    #[arg(long, value_name = "CLASS", value_parser = names::process_class)]
    pub process_class: Option<String>,
    /// Select every process group with this condition (repeatable).
    #[arg(long, value_name = "CONDITION", value_parser = names::condition)]
    pub process_condition: Vec<String>,
}

/// `cordon`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl fdb cordon -c sample node-1\n  kubectl fdb cordon node-1    # every cluster with pods on node-1 (by -l)\n  kubectl fdb cordon -c sample --node-selector machine=a,disk=fast"
)]
pub struct CordonArgs {
    /// The cluster. Without it, every cluster with pods on the nodes: each pod's
    /// `--cluster-label` label names its cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: Option<String>,
    /// Without `-c`: the pod label that names each pod's cluster.
    #[arg(long, short = 'l', value_name = "LABEL", default_value = "foundationdb.org/fdb-cluster-name",
          value_parser = names::label_key)]
    pub cluster_label: String,
    /// The nodes.
    #[arg(value_parser = names::object_name)]
    pub nodes: Vec<String>,
    /// Select the nodes by labels instead (`key=value,...`).
    #[arg(long, value_name = "LABELS", value_parser = names::label_selector)]
    pub node_selector: Option<String>,
    /// Exclude the processes before removing them.
    #[arg(long, short = 'e', action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub exclusion: bool,
}

/// `restart`.
#[derive(Debug, Args)]
pub struct RestartArgs {
    /// The cluster (`-c`), or each named pod's (`-l`).
    #[command(flatten)]
    pub choice: ClusterChoice,
    /// Pod names or process group IDs.
    #[arg(value_parser = names::process_group_or_pod)]
    pub names: Vec<String>,
    /// Restart every process of the cluster.
    #[arg(long)]
    pub all_processes: bool,
    /// Select every process group of this process class.
    #[arg(long, value_name = "CLASS", value_parser = names::process_class)]
    pub process_class: Option<String>,
    /// Select every process group with this condition (repeatable).
    #[arg(long, value_name = "CONDITION", value_parser = names::condition)]
    pub process_condition: Vec<String>,
}

/// `exec`.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// The pod (or process group); default: the first running pod of the cluster.
    #[arg(long, short = 'p', value_parser = names::process_group_or_pod)]
    pub pod: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true)]
    pub command: Vec<String>,
    /// kubectl exec's `-t`: the command gets a terminal, which it does anyway when
    /// standard input is one (as with the Go plugin); when it is not, this says so and the
    /// command runs without.
    #[arg(long, short = 't')]
    pub tty: bool,
    /// kubectl exec's `-i` (so `-it` works as typed there): standard input is always
    /// passed to the command, as the Go plugin does.
    #[arg(long, short = 'i')]
    pub stdin: bool,
}

/// `buggify ...`.
#[derive(Debug, Subcommand)]
pub enum BuggifyCommand {
    /// Make process groups' containers crash-loop (`spec.buggify.crashLoopContainers`).
    CrashLoop(BuggifyListArgs),
    /// Make process groups' pods unschedulable (`spec.buggify.noSchedule`).
    NoSchedule(BuggifyListArgs),
    /// Render every monitor conf empty (`spec.buggify.emptyMonitorConf`): no process runs.
    EmptyMonitorConf(EmptyMonitorConfArgs),
}

/// `buggify crash-loop` and `buggify no-schedule`.
#[derive(Debug, Args)]
pub struct BuggifyListArgs {
    /// The cluster (`-c`), or each named pod's (`-l`).
    #[command(flatten)]
    pub choice: ClusterChoice,
    /// Pod names or process group IDs.
    #[arg(value_parser = names::process_group_or_pod)]
    pub names: Vec<String>,
    /// Remove the given process groups from the list instead.
    #[arg(long)]
    pub clear: bool,
    /// Empty the list.
    #[arg(long, conflicts_with = "clear")]
    pub clean: bool,
    /// The container to crash-loop (crash-loop only).
    #[arg(long, default_value = "foundationdb", value_parser = names::label_name)]
    pub container_name: String,
    /// Crash-loop more fault domains at once than the cluster's redundancy tolerates
    /// (crash-loop only; refused without it: the database could become unavailable).
    #[arg(long)]
    pub force: bool,
}

/// `buggify empty-monitor-conf`.
#[derive(Debug, Args)]
pub struct EmptyMonitorConfArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// The value to set (`--set-value=false` turns it off).
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub set_value: bool,
    /// Turn it off (same as `--set-value=false`).
    #[arg(long, alias = "unset")]
    pub clear: bool,
}

/// `fix-coordinator-ips`.
#[derive(Debug, Args)]
pub struct FixCoordinatorIpsArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// Print the new connection string and what would be done, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `recover-multi-region-cluster`.
#[derive(Debug, Args)]
pub struct RecoverMultiRegionClusterArgs {
    /// The cluster (the FoundationDBCluster of the datacenter that survived).
    #[arg(value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
}

/// `deprecation`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl fdb deprecation\n  kubectl fdb -n fdb deprecation sample\n  kubectl fdb deprecation --only-show-changes=false --show-cluster-spec"
)]
pub struct DeprecationArgs {
    /// The clusters (default: every cluster of the namespace).
    #[arg(value_parser = names::object_name)]
    pub clusters: Vec<String>,
    /// Pin the settings whose default the Go operator changes in its next major version
    /// (imageType unified, locality-based exclusions, DNS in the cluster file) where unset.
    #[arg(long)]
    pub use_future_defaults: bool,
    /// Only show what changes between versions (`=false` also pins today's defaults of
    /// those settings where unset).
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub only_show_changes: bool,
    /// Print the normalized spec instead of a diff.
    #[arg(long)]
    pub show_cluster_spec: bool,
}

/// `update ...`.
#[derive(Debug, Subcommand)]
pub enum UpdateCommand {
    /// Set the connection string in the cluster's status and in its ConfigMap's
    /// `cluster-file` (after the coordinators changed behind the operator's back, e.g. a
    /// restore of the whole cluster). The operator and new pods then use it.
    #[command(
        after_help = "Example:\n  kubectl fdb update connection-string -c sample 'sample:abc@10.1.0.1:4501,10.1.0.2:4501,10.1.0.3:4501'"
    )]
    ConnectionString(UpdateConnectionStringArgs),
}

/// `update connection-string`.
#[derive(Debug, Args)]
pub struct UpdateConnectionStringArgs {
    /// The cluster.
    #[arg(long = "fdb-cluster", short = 'c', value_name = "CLUSTER", value_parser = names::object_name)]
    pub cluster: String,
    /// The new connection string (`description:id@address,...`).
    #[arg(value_name = "CONNECTION_STRING", value_parser = names::connection_string)]
    pub connection_string: String,
    /// Show what would change and change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `get ...`.
#[derive(Debug, Subcommand)]
pub enum GetCommand {
    /// Print the database configuration the spec asks for, as the arguments of `fdbcli
    /// configure` (as the Go plugin does); `--fail-over` swaps the priorities of the main
    /// and remote data centers, `--update` writes that into the spec.
    #[command(
        after_help = "Examples:\n  kubectl fdb get configuration sample\n  kubectl fdb get configuration --fail-over sample\n  kubectl fdb get configuration --fail-over --update sample\n  kubectl fdb get configuration -o json sample"
    )]
    Configuration(ConfigurationArgs),
    /// Print the exclusions of process groups marked for removal.
    ExclusionStatus(GetArgs),
}

/// `get configuration`.
#[derive(Debug, Args)]
pub struct ConfigurationArgs {
    /// The cluster.
    #[arg(value_parser = names::object_name)]
    pub cluster: String,
    /// Swap the priorities of the main and the remote data center (a fail-over of a
    /// two-region cluster; satellites keep theirs).
    #[arg(long)]
    pub fail_over: bool,
    /// Write the configuration (with `--fail-over`: the failed-over one) into
    /// `spec.databaseConfiguration`, after showing the change.
    #[arg(long)]
    pub update: bool,
    /// `json`: the configuration the spec asks for (defaults filled in) and the one the
    /// operator last read from the database, as JSON.
    #[arg(long, short = 'o', value_name = "FORMAT", value_parser = ["json"])]
    pub output: Option<String>,
}

/// `get exclusion-status`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  kubectl fdb get exclusion-status sample\n  kubectl fdb get exclusion-status sample --ignore-fully-excluded=false\n  kubectl fdb get exclusion-status sample --interval=5m"
)]
pub struct GetArgs {
    /// The cluster.
    #[arg(value_parser = names::object_name)]
    pub cluster: String,
    /// Leave out processes that are fully excluded (`=false` lists them too).
    #[arg(long, action = ArgAction::Set, default_value_t = true, num_args = 0..=1,
          default_missing_value = "true", value_name = "BOOL")]
    pub ignore_fully_excluded: bool,
    /// While a process still holds data, read the status again after this long and print
    /// the progress, until every exclusion is done (`30s`, `5m`, `1h30m`).
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = names::duration)]
    pub interval: std::time::Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent_and_takes_go_style_flags() {
        Cli::command().debug_assert();
        let cli = Cli::try_parse_from([
            "kubectl-fdb",
            "-n",
            "db",
            "remove",
            "process-groups",
            "-c",
            "sample",
            "--exclusion=false",
            "sample-storage-1",
        ])
        .unwrap();
        assert_eq!(cli.namespace.as_deref(), Some("db"));
        let Command::Remove(RemoveCommand::ProcessGroups(args)) = cli.command else {
            panic!("not remove");
        };
        assert!(!args.exclusion);
        assert_eq!(args.names, ["sample-storage-1"]);
        let cli = Cli::try_parse_from(["kubectl-fdb", "analyze", "--wait=false", "a"]).unwrap();
        assert!(!cli.wait);
        assert!(Cli::try_parse_from(["kubectl-fdb", "analyze", "--bogus"]).is_err());
    }
}
