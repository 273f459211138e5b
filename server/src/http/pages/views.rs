//! Mapping store rows to `muster_web` view structs. Templates get display-ready values only.

use muster_web::views::{
    IssueCardView, IssueFormView, Nav, NavItem, OptionView, PersonKind, PersonView,
};

use std::collections::HashMap;

use muster_web::partials::widgets;

use crate::domain::{
    AUTO_AGENT_COLOR, Actor, Agent, AgentId, Assignee, Issue, IssueStatus, Member, Priority,
};
use crate::service::Caller;

/// The frame around every signed-in page.
pub fn nav(caller: &Caller, csrf: &str, active: NavItem) -> Nav {
    Nav {
        workspace_name: caller.ws.name.clone(),
        workspace_slug: caller.ws.slug.to_string(),
        user_name: caller.user.display_name.clone(),
        user_email: caller.user.email.as_str().to_owned(),
        role: caller.role.to_string(),
        csrf: csrf.to_owned(),
        active,
        inbox_unread: None,
    }
}

/// A workspace's people and agents, for avatars and pickers.
#[derive(Debug, Clone, Default)]
pub struct People {
    pub members: Vec<Member>,
    pub agents: Vec<Agent>,
    /// Each agent's avatar colour: its own when it chose one, else from its name's hash, with agents
    /// whose initials collide parted by colour (`muster_web::partials::widgets::distinct_colors`).
    agent_colors: HashMap<AgentId, String>,
    /// The workspace's projects: (id, key, name), for the project pickers.
    pub projects: Vec<(crate::domain::ProjectId, String, String)>,
}

impl People {
    /// The people and agents of one workspace.
    pub fn new(members: Vec<Member>, agents: Vec<Agent>) -> Self {
        let names: Vec<&str> = agents.iter().map(|a| a.profile.name.as_str()).collect();
        let auto = widgets::distinct_colors(&names);
        let agent_colors = agents
            .iter()
            .zip(auto)
            .map(|(a, auto)| {
                let color = if a.profile.color.eq_ignore_ascii_case(AUTO_AGENT_COLOR) {
                    auto.to_owned()
                } else {
                    a.profile.color.clone()
                };
                (a.id, color)
            })
            .collect();
        People {
            members,
            agents,
            agent_colors,
            projects: Vec::new(),
        }
    }

    /// Loads every member and agent of the caller's workspace.
    pub async fn load(
        state: &crate::state::AppState,
        caller: &Caller,
    ) -> crate::http::Result<Self> {
        let mut people = People::new(
            state.store.list_members(caller.ws.id).await?,
            state.store.list_agents(caller.ws.id).await?,
        );
        people.projects = state
            .store
            .list_projects(caller.ws.id)
            .await?
            .into_iter()
            .map(|p| (p.id, p.key.to_string(), p.name.as_str().to_owned()))
            .collect();
        Ok(people)
    }

    /// The key of a project of the workspace ("" for none).
    pub fn project_key(&self, id: Option<crate::domain::ProjectId>) -> String {
        id.and_then(|id| self.projects.iter().find(|p| p.0 == id))
            .map(|p| p.1.clone())
            .unwrap_or_default()
    }

    /// "No project" and each project, `selected` (a key) chosen; empty when the workspace has none.
    pub fn project_options(&self, selected: &str) -> Vec<OptionView> {
        if self.projects.is_empty() {
            return Vec::new();
        }
        std::iter::once(OptionView {
            value: String::new(),
            label: "No project".into(),
            selected: selected.trim().is_empty(),
        })
        .chain(self.projects.iter().map(|(_, key, name)| OptionView {
            value: key.clone(),
            label: format!("{key} · {name}"),
            selected: key.eq_ignore_ascii_case(selected.trim()),
        }))
        .collect()
    }

    /// The avatar of an actor.
    pub fn person(&self, actor: Actor) -> PersonView {
        match actor {
            Actor::User(id) => {
                let name = self
                    .members
                    .iter()
                    .find(|m| m.user.id == id)
                    .map_or("Former member", |m| m.user.display_name.as_str());
                PersonView {
                    name: name.to_owned(),
                    initials: widgets::initials(name),
                    color: widgets::avatar_color(name).to_owned(),
                    kind: PersonKind::User,
                    runtime: None,
                }
            }
            Actor::Agent(id) => match self.agents.iter().find(|a| a.id == id) {
                Some(a) => PersonView {
                    name: a.profile.name.as_str().to_owned(),
                    initials: widgets::initials(a.profile.name.as_str()),
                    color: self
                        .agent_colors
                        .get(&a.id)
                        .cloned()
                        .unwrap_or_else(|| a.profile.color.clone()),
                    kind: PersonKind::Agent,
                    runtime: Some(runtime_view(a.profile.kind)),
                },
                None => PersonView {
                    name: "Deleted agent".into(),
                    initials: "?".into(),
                    color: "#9ca3af".into(),
                    kind: PersonKind::Agent,
                    runtime: None,
                },
            },
            Actor::System => PersonView {
                name: "Muster".into(),
                initials: "M".into(),
                color: "#6b7280".into(),
                kind: PersonKind::System,
                runtime: None,
            },
        }
    }

    /// The avatar colour of the agent called `name`, if there is one.
    pub fn agent_color(&self, name: &str) -> Option<String> {
        let a = self
            .agents
            .iter()
            .find(|a| a.profile.name.as_str() == name)?;
        self.agent_colors.get(&a.id).cloned()
    }

    /// Colours for agents' names shown side by side (chart series, ensemble candidates): each agent's
    /// avatar colour (another name's own), parted where two would look alike
    /// (`muster_web::partials::widgets::side_by_side_colors`).
    pub fn side_by_side(&self, names: &[&str]) -> Vec<String> {
        let preferred: Vec<String> = names
            .iter()
            .map(|n| {
                self.agent_color(n)
                    .unwrap_or_else(|| widgets::avatar_color(n).to_owned())
            })
            .collect();
        widgets::side_by_side_colors(names, &preferred)
    }

    /// The avatar of an assignee.
    pub fn assignee(&self, a: Option<Assignee>) -> Option<PersonView> {
        a.map(|a| match a {
            Assignee::User(u) => self.person(Actor::User(u)),
            Assignee::Agent(g) => self.person(Actor::Agent(g)),
        })
    }

    /// Assignee picker options: nobody, members, then agents (labelled as agents).
    pub fn assignee_options(&self, selected: &str) -> Vec<OptionView> {
        let mut out = vec![OptionView {
            value: String::new(),
            label: "Nobody".into(),
            selected: selected.is_empty(),
        }];
        for m in &self.members {
            let value = format!("user:{}", m.user.id);
            out.push(OptionView {
                selected: value == selected,
                value,
                label: m.user.display_name.clone(),
            });
        }
        for a in &self.agents {
            let value = format!("agent:{}", a.id);
            let label = format!("{} (agent, {})", a.profile.name.as_str(), a.profile.kind);
            out.push(OptionView {
                selected: value == selected,
                value,
                label,
            });
        }
        out
    }
}

/// The picker value of an assignee.
pub fn assignee_value(a: Option<Assignee>) -> String {
    match a {
        Some(Assignee::User(u)) => format!("user:{u}"),
        Some(Assignee::Agent(g)) => format!("agent:{g}"),
        None => String::new(),
    }
}

/// The human label of a status.
pub fn status_label(s: IssueStatus) -> &'static str {
    match s {
        IssueStatus::Backlog => "Backlog",
        IssueStatus::Todo => "Todo",
        IssueStatus::InProgress => "In progress",
        IssueStatus::InReview => "In review",
        IssueStatus::Done => "Done",
        IssueStatus::Blocked => "Blocked",
        IssueStatus::Cancelled => "Cancelled",
    }
}

fn priority_label(p: Priority) -> &'static str {
    match p {
        Priority::None => "No priority",
        Priority::Urgent => "Urgent",
        Priority::High => "High",
        Priority::Medium => "Medium",
        Priority::Low => "Low",
    }
}

/// Status options with one selected.
pub fn status_options(selected: &str) -> Vec<OptionView> {
    IssueStatus::ALL
        .iter()
        .map(|s| OptionView {
            value: s.as_str().into(),
            label: status_label(*s).into(),
            selected: s.as_str() == selected,
        })
        .collect()
}

/// Priority options with one selected.
pub fn priority_options(selected: &str) -> Vec<OptionView> {
    Priority::ALL
        .iter()
        .map(|p| OptionView {
            value: p.as_str().into(),
            label: priority_label(*p).into(),
            selected: p.as_str() == selected,
        })
        .collect()
}

/// A board card.
pub fn card(slug: &str, issue: &Issue, people: &People) -> IssueCardView {
    let key = issue.key.to_string();
    IssueCardView {
        url: format!("/w/{slug}/issues/{key}"),
        move_url: format!("/w/{slug}/issues/{key}/move"),
        key,
        title: issue.title.as_str().to_owned(),
        status: issue.status.to_string(),
        priority: issue.priority.to_string(),
        assignee: people.assignee(issue.assignee),
        labels: issue.labels.iter().map(|l| l.as_str().to_owned()).collect(),
        run_state: None,
        run_waiting: None,
        ensemble: None,
        pull: None,
        plan: Default::default(),
        project: Some(people.project_key(issue.project)).filter(|k| !k.is_empty()),
    }
}

/// The issue form filled from raw input (kept on errors): a field not given is empty.
pub fn issue_form(people: &People, form: &IssueForm) -> IssueFormView {
    fn text(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or_default()
    }
    IssueFormView {
        title: text(&form.title).to_owned(),
        body: text(&form.body).to_owned(),
        status: status_options(text(&form.status)),
        priority: priority_options(text(&form.priority)),
        assignee: people.assignee_options(text(&form.assignee)),
        labels: text(&form.labels).to_owned(),
        project: people.project_options(text(&form.project)),
        errors: Default::default(),
        mentions: super::mentions::options(people),
    }
}

/// An issue form as sent. A field the form did not send is `None`: the side panel sends no title, the
/// text form no status.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(default)]
pub struct IssueForm {
    pub title: Option<String>,
    pub body: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    pub assignee: Option<String>,
    /// Comma-separated.
    pub labels: Option<String>,
    /// The parent's key; empty for none.
    pub parent: Option<String>,
    /// A checkbox: "on" when ticked.
    pub wake_on_children: Option<String>,
    /// The project's key; empty for none (on create: the parent's project, if any).
    pub project: Option<String>,
}

impl IssueForm {
    /// Every issue field, as a new issue takes them (a field not sent is empty).
    pub fn input(&self) -> crate::service::issues::IssueInput {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        // A form without a choice keeps the default (create) or the current value (edit).
        let choice = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        crate::service::issues::IssueInput {
            title: Some(text(&self.title)),
            body: Some(text(&self.body)),
            status: choice(&self.status),
            priority: choice(&self.priority),
            assignee: Some(text(&self.assignee)),
            labels: Some(text(&self.labels).split(',').map(str::to_owned).collect()),
            parent: choice(&self.parent),
            wake_on_children: self.wake_on_children.as_ref().map(|v| v == "on"),
            project: choice(&self.project),
        }
    }

    /// The fields the form sent; the others stay as they are (an edit).
    pub fn sent_input(&self) -> crate::service::issues::IssueInput {
        let all = self.input();
        crate::service::issues::IssueInput {
            title: all.title.filter(|_| self.title.is_some()),
            body: all.body.filter(|_| self.body.is_some()),
            status: all.status.filter(|_| self.status.is_some()),
            priority: all.priority.filter(|_| self.priority.is_some()),
            assignee: all.assignee.filter(|_| self.assignee.is_some()),
            labels: all.labels.filter(|_| self.labels.is_some()),
            parent: self.parent.clone(),
            wake_on_children: all.wake_on_children,
            project: self.project.clone(),
        }
    }
}

/// The issue form re-filled from a submission that failed, with its messages.
pub fn issue_form_with_errors(
    people: &People,
    form: &IssueForm,
    errors: muster_web::views::FormErrors,
) -> IssueFormView {
    let mut view = issue_form(people, form);
    view.errors = errors;
    view
}

/// An agent's runtime as the pages show it: the agents crate's name and label.
pub(crate) fn runtime_view(kind: crate::domain::RuntimeKind) -> muster_web::views::RuntimeView {
    muster_web::views::RuntimeView {
        name: kind.as_str().to_owned(),
        label: kind.label().to_owned(),
    }
}
