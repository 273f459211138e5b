use std::collections::HashSet;

use super::*;
use crate::{SkillsPlace, adapter_for, detect, pins};

/// Every kind's facts, checked together: a new kind that forgets one fails here.
#[test]
fn every_kind_has_every_fact() {
    let mut labels = HashSet::new();
    for kind in RuntimeKind::ALL {
        assert_eq!(kind.as_str().parse::<RuntimeKind>(), Ok(kind));
        assert!(labels.insert(kind.label()), "{kind}: label shared");
        for text in [kind.label(), kind.subject(), kind.runner_needs()] {
            assert!(!text.trim().is_empty(), "{kind}");
        }
        assert!(kind.subject().starts_with(char::is_uppercase), "{kind}");
        assert_eq!(adapter_for(kind).kind(), kind, "{kind}: adapter");
        assert!(
            !kind.base_url_vars().is_empty(),
            "{kind}: base URL variables"
        );
        assert!(kind.brief_file().ends_with(".md"), "{kind}");
        // A CLI with a key variable of its own names it in the refused-key hint.
        match kind.key_var() {
            Some(var) => assert!(kind.key_hint().contains(var), "{kind}"),
            None => assert!(kind.key_hint().starts_with("check "), "{kind}"),
        }
        // Only a team's own command has nothing to detect, install or pin.
        let names = detect::binary_names(kind);
        assert_eq!(names.is_empty(), kind.is_custom(), "{kind}: binaries");
        assert_eq!(
            detect::install_hint(kind).is_none(),
            kind.is_custom(),
            "{kind}: install hint"
        );
        // The npm CLIs are pinned and read their skills from a folder; the local loop and a custom
        // command read them from the brief.
        let npm = pins::pin(kind).is_some();
        assert_eq!(npm, !kind.is_custom() && !kind.is_local_model(), "{kind}");
        assert_eq!(
            matches!(adapter_for(kind).skills_place(), SkillsPlace::Brief),
            !npm,
            "{kind}: skills place"
        );
    }
    assert_eq!(RuntimeKind::Claude.brief_file(), "CLAUDE.md");
    assert_eq!(RuntimeKind::Codex.brief_file(), "AGENTS.md");
}

#[test]
fn permission_modes_round_trip_and_are_named() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.to_string().parse::<PermissionMode>(), Ok(mode));
        assert_eq!(serde_json::to_value(mode).unwrap(), mode.as_str());
        assert!(!mode.label().is_empty());
    }
    let err = "root".parse::<PermissionMode>().unwrap_err();
    assert_eq!(err.field, "permission_mode");
    assert_eq!(
        err.to_string(),
        r#"unknown permission_mode "root"; expected one of: read_only, workspace_write, bypass"#
    );
    assert_eq!(
        " bypass ".parse::<PermissionMode>(),
        Ok(PermissionMode::Bypass)
    );
}
