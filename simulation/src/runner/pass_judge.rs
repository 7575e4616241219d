//! How the runner judges one operator pass: the same for every operator instance, so a
//! multi-instance run and a single one end passes alike.

use std::time::Duration;

use fdb_operator::controller::PassOutcome;

/// When a pass completed without reaching Reconciled and asked for nothing, the
/// operator looks again after this long (the periodic resync of a real controller).
const RESYNC_SECONDS: u64 = 30;
/// After a failed pass, the operator retries after this long.
const ERROR_BACKOFF_SECONDS: u64 = 5;

/// What one pass ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PassEnd {
    Reconciled,
    /// Run again after this long.
    After(Duration),
}

/// How a pass ended, as the run reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PassVerdict {
    /// What comes next.
    pub(super) end: PassEnd,
    /// The progress line.
    pub(super) message: String,
    /// Why the pass failed, for the cluster's event.
    pub(super) failure: Option<String>,
    /// Every wait of the pass (`Step: reason (in Ns)`): the one that ended it first,
    /// then every step that waited while the pass went on.
    pub(super) waits: Vec<String>,
}

/// Every wait of a pass, the one that ended it first (unless a step's own wait says
/// it), and the `; also waiting: ...` suffix naming the waits the outcome does not say.
fn pass_waits(report: &fdb_operator::controller::PassReport) -> (Vec<String>, String) {
    let mut waits: Vec<String> = report.waits.iter().map(ToString::to_string).collect();
    let others: Vec<&str> = report
        .waits
        .iter()
        .zip(&waits)
        .filter(|(wait, _)| match &report.outcome {
            PassOutcome::Requeue { step, reason, .. } => {
                wait.step != *step || wait.reason != *reason
            }
            PassOutcome::Completed => true,
        })
        .map(|(_, text)| text.as_str())
        .collect();
    let also = if others.is_empty() {
        String::new()
    } else {
        format!("; also waiting: {}", others.join("; "))
    };
    if let PassOutcome::Requeue {
        delay,
        reason,
        step,
    } = &report.outcome
        && !report
            .waits
            .iter()
            .any(|w| w.step == *step && w.reason == *reason)
    {
        waits.insert(0, format!("{step}: {reason} (in {}s)", delay.as_secs()));
    }
    (waits, also)
}

/// Judges one pass's result; `label` names the pass in the progress line (`pass 7`,
/// `pass 7 (kc2)`).
pub(super) fn judge_pass<E: std::fmt::Display>(
    result: Result<fdb_operator::controller::PassReport, E>,
    label: &str,
) -> PassVerdict {
    let (waits, also) = match &result {
        Ok(report) => pass_waits(report),
        Err(_) => (Vec::new(), String::new()),
    };
    let verdict = |end, message: String, failure| PassVerdict {
        end,
        message: format!("{message}{also}"),
        failure,
        waits: waits.clone(),
    };
    match result {
        Ok(report) => match report.outcome {
            PassOutcome::Completed if report.reconciled => {
                verdict(PassEnd::Reconciled, format!("{label}: reconciled"), None)
            }
            PassOutcome::Completed => verdict(
                PassEnd::After(Duration::from_secs(RESYNC_SECONDS)),
                format!(
                    "{label}: completed, not reconciled yet; looking again in {RESYNC_SECONDS}s"
                ),
                None,
            ),
            PassOutcome::Requeue {
                delay,
                reason,
                step,
            } => verdict(
                PassEnd::After(delay),
                format!(
                    "{label}: {step}: {reason} (requeue in {}s)",
                    delay.as_secs()
                ),
                None,
            ),
        },
        Err(error) => {
            let detail = error.to_string();
            verdict(
                PassEnd::After(Duration::from_secs(ERROR_BACKOFF_SECONDS)),
                format!("{label}: failed: {detail}; retrying in {ERROR_BACKOFF_SECONDS}s"),
                Some(detail),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fdb_operator::controller::{PassReport, StepWait};

    fn report(outcome: PassOutcome, reconciled: bool) -> Result<PassReport, String> {
        Ok(PassReport::new(outcome, reconciled))
    }

    #[test]
    fn a_pass_is_judged_the_same_for_every_instance() {
        let reconciled = judge_pass(report(PassOutcome::Completed, true), "pass 3 (kc2)");
        assert_eq!(reconciled.end, PassEnd::Reconciled);
        assert_eq!(reconciled.message, "pass 3 (kc2): reconciled");

        let again = judge_pass(report(PassOutcome::Completed, false), "pass 4");
        assert_eq!(
            again.end,
            PassEnd::After(Duration::from_secs(RESYNC_SECONDS))
        );

        let requeue = judge_pass(
            report(
                PassOutcome::Requeue {
                    delay: Duration::from_secs(15),
                    reason: "waiting".into(),
                    step: "UpdatePodConfig",
                },
                false,
            ),
            "pass 5",
        );
        assert_eq!(requeue.end, PassEnd::After(Duration::from_secs(15)));
        assert_eq!(
            requeue.message,
            "pass 5: UpdatePodConfig: waiting (requeue in 15s)"
        );

        let mut both = PassReport::new(
            PassOutcome::Requeue {
                delay: Duration::from_secs(60),
                reason: "coordinators cannot be placed".into(),
                step: "ChangeCoordinators",
            },
            false,
        );
        both.waits = vec![
            StepWait {
                step: "ChangeCoordinators",
                delay: Duration::from_secs(60),
                reason: "coordinators cannot be placed".into(),
            },
            StepWait {
                step: "RemovePods",
                delay: Duration::from_secs(60),
                reason: "the removal of 1 process groups is held".into(),
            },
        ];
        let every = judge_pass(Ok::<_, String>(both), "pass 7");
        assert_eq!(
            every.message,
            "pass 7: ChangeCoordinators: coordinators cannot be placed (requeue in 60s); also waiting: RemovePods: the removal of 1 process groups is held (in 60s)"
        );
        assert_eq!(every.waits.len(), 2, "every wait is reported");

        let failed = judge_pass(Err::<PassReport, _>("boom"), "pass 6");
        assert_eq!(
            failed.end,
            PassEnd::After(Duration::from_secs(ERROR_BACKOFF_SECONDS))
        );
        assert_eq!(failed.failure.as_deref(), Some("boom"));
    }
}
