//! `act: {as: user, exec: {...}}`: a user's command in a pod's container. The pod is
//! looked up through the world's API as kubectl looks it up (a Deployment's selector,
//! then its pods), and the command runs in the simulated container the served
//! `pods/exec` reaches (`serve/exec.rs`), so what it changes in the database is the
//! user's, as in the served world.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use super::act_plugin::clip;
use super::{RunError, Runner, USER_ACTOR};
use crate::result::EventSource;
use crate::scenario::{ExecCommand, ExecTarget};
use crate::serve::exec::ExecRequest;

impl Runner {
    /// Runs `exec`'s command as a user; an exit status other than the expected one, or
    /// an output without the expected text, fails the step with what it printed.
    pub(super) async fn run_exec(&mut self, exec: &ExecCommand) -> Result<(), RunError> {
        let pod = self.exec_pod(&exec.target).await?;
        let runner = self.act_exec();
        let request = ExecRequest {
            namespace: self.namespace.clone(),
            pod: pod.clone(),
            container: exec.container.clone(),
            command: exec.command.clone(),
            stdin: false,
            tty: false,
        };
        let output = runner.run(&request).await.map_err(|(code, message)| {
            RunError::Act(format!("exec in pod/{pod}: {code} {message}"))
        })?;
        let printed = format!("{}{}", output.stdout, output.stderr);
        self.log.record(
            EventSource::K8s,
            "exec",
            &format!("pod/{pod}: {}", exec.command.join(" ")),
            format!("exit {}\n{}", output.exit_code, clip(&printed)).trim_end(),
        );
        if output.exit_code != exec.exit_code {
            return Err(RunError::Act(format!(
                "exec in pod/{pod}: `{}` exited with {} (expected {}): {}",
                exec.command.join(" "),
                output.exit_code,
                exec.exit_code,
                clip(printed.trim())
            )));
        }
        if let Some(wanted) = exec
            .output_contains
            .as_deref()
            .filter(|w| !printed.contains(w))
        {
            return Err(RunError::Act(format!(
                "exec in pod/{pod}: the output of `{}` does not contain {wanted:?}: {}",
                exec.command.join(" "),
                clip(printed.trim())
            )));
        }
        Ok(())
    }

    /// The pod the command runs in: the named one, or the first running pod of the
    /// Deployment's selector by name.
    async fn exec_pod(&self, target: &ExecTarget) -> Result<String, RunError> {
        let name = match target {
            ExecTarget::Pod(name) => return Ok(name.clone()),
            ExecTarget::Deployment(name) => name,
        };
        let client = self.api.client(USER_ACTOR);
        let deployments: Api<Deployment> = Api::namespaced(client.clone(), &self.namespace);
        let deployment = deployments
            .get(name)
            .await
            .map_err(|e| RunError::Act(format!("exec in deployment/{name}: {e}")))?;
        let labels: BTreeMap<String, String> = deployment
            .spec
            .and_then(|spec| spec.selector.match_labels)
            .unwrap_or_default();
        if labels.is_empty() {
            return Err(RunError::Act(format!(
                "exec in deployment/{name}: the Deployment has no matchLabels selector"
            )));
        }
        let selector = labels
            .iter()
            .map(|(key, value)| format!("{key}={value}"))
            .collect::<Vec<_>>()
            .join(",");
        let pods: Api<Pod> = Api::namespaced(client, &self.namespace);
        let listed = pods
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(|e| RunError::Act(format!("exec in deployment/{name}: {e}")))?;
        let mut running: Vec<String> = listed
            .items
            .into_iter()
            .filter(|pod| {
                pod.metadata.deletion_timestamp.is_none()
                    && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            })
            .filter_map(|pod| pod.metadata.name)
            .collect();
        running.sort();
        running.into_iter().next().ok_or_else(|| {
            RunError::Act(format!(
                "exec in deployment/{name}: no running pod matches its selector {selector}"
            ))
        })
    }
}
