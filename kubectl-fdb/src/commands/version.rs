//! `version`: the plugin's version, the API server's, and the operator's image tag.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;

use crate::cli::VersionArgs;
use crate::error::PluginError;
use crate::session::Session;

/// Prints the versions; the API must answer.
pub async fn run(session: &Session, args: &VersionArgs) -> Result<u8, PluginError> {
    println!("kubectl-fdb: {}", env!("CARGO_PKG_VERSION"));
    let server = session
        .client
        .apiserver_version()
        .await
        .map_err(|error| session.error(error, "read the API server's version"))?;
    println!("Kubernetes API: {}", server.git_version);
    let deployments: Api<Deployment> = Api::namespaced(session.client.clone(), &session.namespace);
    let operator = deployments
        .get_opt(&crate::names::segment(&args.operator_name))
        .await
        .map_err(|error| session.error(error, "read the operator's Deployment"))?;
    let image = operator
        .and_then(|d| d.spec)
        .and_then(|s| s.template.spec)
        .and_then(|s| s.containers.into_iter().next())
        .and_then(|c| c.image);
    match image {
        Some(image) => {
            let tag = image.rsplit_once(':').map_or("latest", |(_, tag)| tag);
            println!("operator: {tag} ({image})");
        }
        None => println!(
            "operator: no Deployment {}/{} (set --operator-name)",
            session.namespace, args.operator_name
        ),
    }
    Ok(0)
}
