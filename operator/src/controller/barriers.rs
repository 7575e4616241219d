//! Which steps are barriers: the one table of whose waits end the pass (the steps after
//! them must not act before they are done) and whose waits let the later steps go on.
//! A leaf, read by the executor and by the step list.

/// Whether a wait of `step` ends the pass (a barrier: the steps after it must not act
/// before it is done) or lets the later steps act (it waits on something of its own).
/// Used by the executor for the steps that return verdicts; the other steps choose
/// `Requeue` (barrier) or `DelayedRequeue` as listed here.
pub fn holds_later_steps(step: &str) -> bool {
    match step {
        // Later steps read what these write (status, lock settings, ConfigMap, objects,
        // connection string, pod configs, configuration): they must be done first.
        "UpdateStatus"
        | "UpdateLockConfiguration"
        | "UpdateConfigMap"
        | "CheckClientCompatibility"
        | "AddProcessGroups"
        | "AddServices"
        | "AddPVCs"
        | "AddPods"
        | "GenerateInitialClusterFile"
        | "UpdateSidecarVersions"
        | "UpdatePodConfig"
        | "UpdateLabels"
        | "UpdateDatabaseConfiguration"
        | "ChooseRemovals"
        // Restarts and pod updates take processes down: nothing after them may add to it.
        | "BounceProcesses"
        | "RemoveIncompatibleProcesses"
        | "MaintenanceModeChecker"
        | "UpdatePods" => true,
        // These wait on something of their own (one stuck group, a failed pod, coordinators
        // that cannot be placed now, a pod still terminating): the later steps go on, and
        // the pass ends with the earliest of the waits.
        "ReplaceMisconfiguredPods"
        | "ReplaceFailedPods"
        | "DeleteTerminalPods"
        | "DeletePodsForBuggification"
        | "ExcludeInstances"
        | "ChangeCoordinators"
        | "RemoveServices"
        | "RemovePods" => false,
        _ => true,
    }
}
