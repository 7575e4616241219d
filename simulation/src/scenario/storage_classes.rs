//! `world.storageClasses`: the storage classes of the simulated cluster, with their
//! volume binding mode and topology (spec/simulation.md, "Additions (v4)").

use serde::{Deserialize, Serialize};

pub use crate::kube::core_defaults::DEFAULT_STORAGE_CLASS;

/// When a claim of the class binds (`volumeBindingMode` of a StorageClass).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum BindingMode {
    /// At once, where the provisioner chooses, without knowing the pod.
    Immediate,
    /// When the first pod using the claim is scheduled, where that pod goes.
    #[default]
    WaitForFirstConsumer,
}

/// Where a bound volume can be used from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VolumeTopology {
    /// From every node (network storage).
    #[default]
    None,
    /// Only from the node it was bound on (local volumes).
    Node,
    /// Only from the nodes of the zone it was bound in (zonal disks).
    Zone,
}

/// One storage class of `world.storageClasses`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageClassSettings {
    /// The class name claims give in `storageClassName`.
    pub name: String,
    /// Whether claims without a class get this one (the DefaultStorageClass admission).
    #[serde(default)]
    pub default: bool,
    /// When its claims bind (default WaitForFirstConsumer).
    #[serde(default)]
    pub binding_mode: BindingMode,
    /// Where its volumes can be used from (default none: anywhere).
    #[serde(default)]
    pub topology: VolumeTopology,
}

/// The classes of a world whose scenario names none.
pub fn default_storage_classes() -> Vec<StorageClassSettings> {
    vec![StorageClassSettings {
        name: DEFAULT_STORAGE_CLASS.to_owned(),
        default: true,
        binding_mode: BindingMode::WaitForFirstConsumer,
        topology: VolumeTopology::None,
    }]
}

/// What is wrong with `world.storageClasses`, as (field, message).
pub(super) fn check_storage_classes(
    classes: &[StorageClassSettings],
) -> Result<(), (String, String)> {
    let mut seen = std::collections::BTreeSet::new();
    for (index, class) in classes.iter().enumerate() {
        let field = format!("world.storageClasses[{index}].name");
        if let Some(problem) = fdb_shared::validation::names::dns1123_subdomain_error(&class.name) {
            return Err((
                field,
                format!("{:?}: {problem} (DNS-1123 subdomain)", class.name),
            ));
        }
        if !seen.insert(class.name.as_str()) {
            return Err((field, format!("{:?} is named twice", class.name)));
        }
    }
    if classes.iter().filter(|c| c.default).count() > 1 {
        return Err((
            "world.storageClasses".to_owned(),
            "at most one class may be the default".to_owned(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_with_their_defaults_and_bad_ones_are_named() {
        let classes: Vec<StorageClassSettings> = serde_yaml_ng::from_str(
            "[{name: local, default: true, bindingMode: WaitForFirstConsumer, topology: node}, {name: ebs, bindingMode: Immediate, topology: zone}, {name: nfs}]",
        )
        .unwrap();
        assert_eq!(classes[0].topology, VolumeTopology::Node);
        assert_eq!(classes[1].binding_mode, BindingMode::Immediate);
        assert_eq!(classes[2].binding_mode, BindingMode::WaitForFirstConsumer);
        assert_eq!(classes[2].topology, VolumeTopology::None);
        assert!(check_storage_classes(&classes).is_ok());
        let mut twice = classes.clone();
        twice[2].name = "local".into();
        assert_eq!(
            check_storage_classes(&twice).unwrap_err().0,
            "world.storageClasses[2].name"
        );
        let mut defaults = classes.clone();
        defaults[1].default = true;
        assert!(check_storage_classes(&defaults).is_err());
        let mut bad = classes;
        bad[0].name = "Local_Disk".into();
        assert!(
            check_storage_classes(&bad)
                .unwrap_err()
                .1
                .contains("DNS-1123")
        );
        assert!(
            serde_yaml_ng::from_str::<StorageClassSettings>("{name: a, topology: rack}").is_err()
        );
    }
}
