//! Container image selection from `imageConfigs` (docs/controller-model.md, "The pod").

use crate::api::cluster::FoundationDBClusterSpec;
use crate::api::image_config::ImageConfig;

/// Base image of the main container when no image config sets one.
pub const DEFAULT_MAIN_BASE_IMAGE: &str = "foundationdb/foundationdb";
/// Base image of both containers of a unified-image pod when no image config sets one
/// (the Go operator's default since v2).
pub const DEFAULT_UNIFIED_BASE_IMAGE: &str = "foundationdb/fdb-kubernetes-monitor";
/// Base image of the sidecar container when no image config sets one.
pub const DEFAULT_SIDECAR_BASE_IMAGE: &str = "foundationdb/foundationdb-kubernetes-sidecar";
/// Tag suffix of sidecar images when no image config sets one.
pub const DEFAULT_SIDECAR_TAG_SUFFIX: &str = "-1";

/// The image for `version`: for each of base image, tag and tag suffix, the first config
/// whose version is empty or equal to `version` and that sets the field wins; the result
/// is `base:tag`, or `base:<version><suffix>` without a tag.
pub fn select_image(
    configs: &[ImageConfig],
    version: &str,
    default_base: &str,
    default_suffix: &str,
) -> String {
    let applicable = || {
        configs.iter().filter(|config| {
            config
                .version
                .as_deref()
                .is_none_or(|v| v.is_empty() || v == version)
        })
    };
    let first = |field: fn(&ImageConfig) -> Option<&String>| {
        applicable().find_map(|config| field(config).filter(|value| !value.is_empty()))
    };
    let base = first(|c| c.base_image.as_ref()).map_or(default_base, String::as_str);
    match first(|c| c.tag.as_ref()) {
        Some(tag) => format!("{base}:{tag}"),
        None => {
            let suffix = first(|c| c.tag_suffix.as_ref()).map_or(default_suffix, String::as_str);
            format!("{base}:{version}{suffix}")
        }
    }
}

/// Image of the main `foundationdb` container for `version`.
pub fn main_image(spec: &FoundationDBClusterSpec, version: &str) -> String {
    select_image(
        &spec.main_container.image_configs,
        version,
        DEFAULT_MAIN_BASE_IMAGE,
        "",
    )
}

/// Image of a unified-image pod's containers for `version`: the main container's image
/// configs, with the monitor's image as the default base.
pub fn unified_image(spec: &FoundationDBClusterSpec, version: &str) -> String {
    select_image(
        &spec.main_container.image_configs,
        version,
        DEFAULT_UNIFIED_BASE_IMAGE,
        "",
    )
}

/// Image of the sidecar container for `version`.
pub fn sidecar_image(spec: &FoundationDBClusterSpec, version: &str) -> String {
    select_image(
        &spec.sidecar_container.image_configs,
        version,
        DEFAULT_SIDECAR_BASE_IMAGE,
        DEFAULT_SIDECAR_TAG_SUFFIX,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(json: &str) -> Vec<ImageConfig> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn defaults_without_configs() {
        let spec = FoundationDBClusterSpec::default();
        assert_eq!(
            main_image(&spec, "7.1.57"),
            "foundationdb/foundationdb:7.1.57"
        );
        assert_eq!(
            sidecar_image(&spec, "7.1.57"),
            "foundationdb/foundationdb-kubernetes-sidecar:7.1.57-1"
        );
    }

    #[test]
    fn first_matching_config_wins_per_field() {
        let configs = configs(
            r#"[{"version": "7.3.43", "tag": "special"},
                {"baseImage": "registry.example/fdb"},
                {"baseImage": "ignored/fdb", "tagSuffix": "-2"}]"#,
        );
        assert_eq!(
            select_image(&configs, "7.1.57", "default/fdb", "-1"),
            "registry.example/fdb:7.1.57-2"
        );
        assert_eq!(
            select_image(&configs, "7.3.43", "default/fdb", "-1"),
            "registry.example/fdb:special"
        );
    }
}
