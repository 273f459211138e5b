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
