//! The people and workspaces tests start from, written straight in the store: one place for the
//! password, its (slow, so computed once) hash and the usual first account.

use std::sync::{Arc, LazyLock};

use muster::domain::{
    Agent, AgentName, Email, Member, NewAgent, NewUser, NewWorkspace, Role, RuntimeKind, User,
    Workspace, WorkspaceId,
};
use muster::store::Store;

/// The password every seeded person signs in with.
pub const PASSWORD: &str = "correct-horse";

/// [`PASSWORD`]'s hash, computed once: Argon2 is slow on purpose.
static PASSWORD_HASH: LazyLock<String> =
    LazyLock::new(|| muster::auth::hash_password(PASSWORD).expect("hash the test password"));

/// A person to store, `name <email>`, who signs in with [`PASSWORD`].
pub fn person(email: &str, name: &str) -> NewUser {
    NewUser {
        email: Email::parse(email).expect("a test email"),
        display_name: name.to_owned(),
        password_hash: PASSWORD_HASH.clone(),
    }
}

/// [`person`] whose display name is their email.
pub fn by_email(email: &str) -> NewUser {
    person(email, email)
}

/// `owner`, the first account, with the workspace `(name, slug, key prefix)` they own.
pub async fn owner_of(
    store: &Arc<dyn Store>,
    owner: NewUser,
    (name, slug, prefix): (&str, &str, &str),
) -> (User, Workspace) {
    let ws = NewWorkspace::parse(name, slug, prefix).expect("a test workspace");
    store
        .create_owner_and_workspace(&owner, &ws)
        .await
        .expect("store the owner and the workspace")
}

/// The usual workspace: `Acme` at `/w/acme`, its issues `ACM-n`.
pub const ACME: (&str, &str, &str) = ("Acme", "acme", "ACM");

/// `Ada Lovelace <ada@acme.test>` owning `Acme` (`/w/acme`, issues `ACM-n`): the usual first account.
pub async fn acme(store: &Arc<dyn Store>) -> (User, Workspace) {
    let ada = person("ada@acme.test", "Ada Lovelace");
    owner_of(store, ada, ACME).await
}

/// Adds `person` to the workspace `ws` with `role`.
pub async fn member(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    person: NewUser,
    role: Role,
) -> Member {
    store
        .add_new_member(ws, &person, role)
        .await
        .expect("store the member")
}

/// An agent `name` of `kind` in `ws` with the defaults a new agent gets.
pub async fn agent(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    name: &str,
    kind: RuntimeKind,
) -> Agent {
    let new = NewAgent::new(AgentName::parse(name).expect("a test agent name"), kind);
    store.create_agent(ws, &new).await.expect("store the agent")
}

/// The session cookie pair (`muster_session=…`) that the answer to a sign-in sets.
pub fn session_cookie(login: &reqwest::Response) -> String {
    login
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("muster_session="))
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

/// A GitHub connection of `ws` to `acme/app`, straight in the store: its token and secret are sealed
/// placeholders that nothing opens (tests never reach a forge through it).
pub async fn forge_connection(
    store: &Arc<dyn Store>,
    ws: WorkspaceId,
    created_by: muster::domain::UserId,
) -> muster::domain::ForgeConnection {
    let new = muster::domain::NewForgeConnection {
        workspace_id: ws,
        kind: muster::domain::ForgeKind::Github,
        api_url: "https://api.github.com".into(),
        repo: "acme/app".into(),
        token_sealed: "sealed-placeholder".into(),
        webhook_secret_sealed: "sealed-placeholder".into(),
        auto_open: false,
        max_rounds: muster::domain::DEFAULT_MAX_ROUNDS,
        on_close: muster::domain::OnClose::Todo,
        created_by,
    };
    store
        .create_forge_connection(&new)
        .await
        .expect("store the forge connection")
}

/// Draft pull request `number` of `run`'s work on its issue, as if just opened on `conn`'s forge.
pub async fn pull_request(
    store: &Arc<dyn Store>,
    conn: &muster::domain::ForgeConnection,
    run: &muster::domain::Run,
    number: i64,
) -> muster::domain::PullRequest {
    let new = muster::domain::NewPullRequest {
        workspace_id: run.workspace_id,
        connection_id: conn.id,
        issue_id: run.issue_id,
        agent_id: run.agent_id,
        run_id: run.id,
        number,
        url: format!("https://github.com/{}/pull/{number}", conn.repo),
        branch: format!("muster/{number}"),
        base: "main".into(),
        draft: true,
        head_sha: "0123456789abcdef0123456789abcdef01234567".into(),
    };
    store
        .create_pull_request(&new)
        .await
        .expect("store the pull request")
}
