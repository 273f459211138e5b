//! The skills section of an agent's page: attached skills with an enabled switch and a detach button,
//! and a form to attach another. Every form works without JavaScript (303 back to the agent); with htmx
//! the section swaps itself in place.

use maud::{Markup, html};

use crate::partials::form::{csrf, options};
use crate::views::AgentSkillsView;

/// The section, `id="agent-skills"`.
pub fn agent_skills(v: &AgentSkillsView) -> Markup {
    html! {
        section.panel #agent-skills {
            h2 { "Skills" }
            p.hint { "Enabled skills are written into each run's skills folder (or its brief, for custom and local agents). "
                a href=(v.skills_url) { "All skills" } }
            @if v.attached.is_empty() {
                p.muted { "No skills attached." }
            } @else {
                ul.agent-skill-list {
                    @for s in &v.attached {
                        li id={ "agent-skill-" (s.slug) } {
                            form.inline method="post" action={ (v.base_url) "/" (s.slug) "/toggle" }
                                hx-post={ (v.base_url) "/" (s.slug) "/toggle" } hx-target="#agent-skills" hx-swap="outerHTML" {
                                (csrf(&v.csrf))
                                input type="hidden" name="enabled" value=(if s.enabled { "false" } else { "true" });
                                button.switch type="submit" role="switch" aria-checked=(s.enabled)
                                    title=(if s.enabled { "Enabled: click to disable" } else { "Disabled: click to enable" }) {
                                    (if s.enabled { "On" } else { "Off" })
                                }
                            }
                            " " a href=(s.url) { code { (s.slug) } }
                            " " span.muted { (s.description) }
                            " "
                            form.inline method="post" action={ (v.base_url) "/" (s.slug) "/detach" }
                                hx-post={ (v.base_url) "/" (s.slug) "/detach" } hx-target="#agent-skills" hx-swap="outerHTML" {
                                (csrf(&v.csrf))
                                button.btn.btn-small type="submit" { "Detach" }
                            }
                        }
                    }
                }
            }
            @if !v.available.is_empty() {
                form method="post" action=(v.base_url) hx-post=(v.base_url) hx-target="#agent-skills" hx-swap="outerHTML" {
                    (csrf(&v.csrf))
                    label for="attach-skill" { "Attach" }
                    " "
                    select #attach-skill name="skill" { (options(&v.available)) }
                    " "
                    label { input type="checkbox" name="enabled" value="true" checked; " enabled" }
                    " "
                    button.btn type="submit" { "Attach" }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{AgentSkillRowView, OptionView};

    #[test]
    fn lists_attached_skills_with_switches_and_offers_the_rest() {
        let v = AgentSkillsView {
            csrf: "tok".into(),
            base_url: "/w/acme/agents/rex/skills".into(),
            attached: vec![AgentSkillRowView {
                slug: "review-a-diff".into(),
                description: "<b>Review</b>".into(),
                enabled: false,
                url: "/w/acme/skills/review-a-diff".into(),
            }],
            available: vec![OptionView {
                value: "test-first-fix".into(),
                label: "test-first-fix".into(),
                selected: false,
            }],
            skills_url: "/w/acme/skills".into(),
        };
        let html = agent_skills(&v).into_string();
        assert!(html.contains(r#"id="agent-skills""#));
        assert!(html.contains(r#"action="/w/acme/agents/rex/skills/review-a-diff/toggle""#));
        assert!(html.contains(r#"aria-checked="false""#));
        assert!(
            html.contains(r#"name="enabled" value="true""#),
            "a disabled skill's switch turns it on"
        );
        assert!(html.contains(r#"action="/w/acme/agents/rex/skills/review-a-diff/detach""#));
        assert!(html.contains(r#"<option value="test-first-fix""#));
        assert!(html.contains("&lt;b&gt;Review"), "descriptions are escaped");
    }
}
