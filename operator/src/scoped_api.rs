//! The API of a namespaced kind as the controllers watch it: in one namespace, or in all.

use kube::Api;

/// The API of a namespaced kind: in `namespace`, or in every namespace.
pub(crate) fn api<K>(client: &kube::Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>,
{
    match namespace {
        Some(namespace) => Api::namespaced(client.clone(), namespace),
        None => Api::all(client.clone()),
    }
}
