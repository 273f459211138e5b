//! Sample views for the Ensembles pages.

use super::{agent, err, nav, opts};
use crate::views::*;

const AGENTS: &[(&str, &str)] = &[
    ("claude-quick", "#d97706"),
    ("codex", "#0891b2"),
    ("opencode-slow", "#16a34a"),
    ("judge", "#7c3aed"),
];

/// Two ensembles, one with a check, reviewer and budget, one bare.
pub fn ensembles() -> EnsembleListView {
    let trio = EnsembleRowView {
        name: "trio".into(),
        members: AGENTS[..3].iter().map(|(n, c)| agent(n, c)).collect(),
        check: Some("cargo test".into()),
        check_timeout: Some("stopped after 600 s".into()),
        early_stop: "first green".into(),
        reviewer: Some(agent("judge", "#7c3aed")),
        budget: Some("$3.00 · 200,000 tokens".into()),
        per_candidate: Some("$1.00 · 66,667 tokens".into()),
        share: "equal share".into(),
        edit_url: Some("/w/acme/ensembles/trio/edit".into()),
    };
    let pair = EnsembleRowView {
        name: "pair".into(),
        members: AGENTS[..2].iter().map(|(n, c)| agent(n, c)).collect(),
        check: None,
        check_timeout: None,
        early_stop: "all finish".into(),
        reviewer: None,
        budget: None,
        per_candidate: None,
        share: "equal share".into(),
        edit_url: Some("/w/acme/ensembles/pair/edit".into()),
    };
    EnsembleListView {
        nav: nav(NavItem::Ensembles),
        ensembles: vec![trio, pair],
        can_manage: true,
    }
}

/// The form for `trio` sent back with one member checked: the members' message, the rest as typed.
pub fn ensemble_form() -> EnsembleFormView {
    EnsembleFormView {
        nav: nav(NavItem::Ensembles),
        is_new: false,
        title: "trio".into(),
        action: "/w/acme/ensembles/trio".into(),
        delete_url: Some("/w/acme/ensembles/trio/delete".into()),
        name: "trio".into(),
        agents: AGENTS
            .iter()
            .map(|(n, c)| MemberChoiceView {
                name: (*n).into(),
                avatar: agent(n, c),
                checked: *n == "codex",
            })
            .collect(),
        check: "cargo test".into(),
        check_timeout: "600".into(),
        early_stop: opts(
            &[
                ("all", "All finish"),
                ("first_green", "First green"),
                ("quorum", "Quorum of K"),
            ],
            "quorum",
        ),
        quorum: "2".into(),
        reviewer: opts(
            &[
                ("", "None"),
                ("claude-quick", "claude-quick"),
                ("codex", "codex"),
                ("opencode-slow", "opencode-slow"),
                ("judge", "judge"),
            ],
            "judge",
        ),
        budget_usd: "3.00".into(),
        budget_tokens: "200000".into(),
        share: String::new(),
        errors: err("members", "an ensemble has 2 to 8 members; this one has 1"),
    }
}
