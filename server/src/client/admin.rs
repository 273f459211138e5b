//! `muster admin bootstrap`: straight on the database (no server needed, and safe while one runs on the same
//! SQLite file or Postgres database), make sure an owner account and a workspace exist, then mint an API
//! token for them, printed alone on the last line of stdout so scripts can take it with `tail -n 1`.

use anyhow::Context as _;

use super::Secret;
use super::output::{clean, print_json};
use crate::domain::{Email, NewApiToken, NewUser, NewWorkspace, Role, User, Workspace};
use crate::service::members;
use crate::store::{self, DatabaseUrl, PoolOptions, Store};

/// The workspace created for a new owner when `--workspace` is not given.
pub const DEFAULT_WORKSPACE: &str = "Muster";

/// What `muster admin bootstrap` was asked for.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    /// The owner's email.
    pub email: String,
    /// Their password (checked against the account when it exists).
    pub password: Secret,
    /// Workspace name: created for a new owner, or chosen among an existing user's workspaces.
    pub workspace: Option<String>,
    /// Display name for a new account (default: the part of the email before `@`).
    pub name: Option<String>,
    /// The new token's name, shown on the Tokens page.
    pub token_name: String,
    /// Print one JSON object instead of lines.
    pub json: bool,
}

/// What bootstrap found or made.
struct Outcome {
    user: User,
    workspace: Workspace,
    role: Role,
    created_user: bool,
    created_workspace: bool,
}

/// Runs the bootstrap against the database at `url`.
pub async fn bootstrap(
    url: &DatabaseUrl,
    pool: PoolOptions,
    input: &Bootstrap,
) -> anyhow::Result<()> {
    let email = Email::parse(&input.email)?;
    let token_name = input.token_name.trim();
    anyhow::ensure!(
        !token_name.is_empty() && token_name.chars().count() <= 100,
        "token-name: must be 1 to 100 characters"
    );
    let store = store::connect(url, pool).await?;
    let result = async {
        let outcome = owner_and_workspace(store.as_ref(), &email, input).await?;
        let token = mint(store.as_ref(), &outcome, token_name).await?;
        Ok::<_, anyhow::Error>((outcome, token))
    }
    .await;
    store.close().await;
    let (outcome, token) = result?;
    report(&outcome, &token, input.json)
}

async fn owner_and_workspace(
    store: &dyn Store,
    email: &Email,
    input: &Bootstrap,
) -> anyhow::Result<Outcome> {
    let user = match store.get_user_by_email(email).await {
        Ok(user) => user,
        Err(store::Error::NotFound) => return create_owner(store, email, input).await,
        Err(e) => return Err(e).context("cannot look up the user"),
    };
    let (password, hash) = (input.password.clone(), user.password_hash.clone());
    let matches =
        tokio::task::spawn_blocking(move || crate::auth::verify_password(password.expose(), &hash))
            .await
            .context("password check failed")?;
    anyhow::ensure!(
        matches,
        "password: does not match the existing account {}",
        email.as_str()
    );
    let workspaces = store.list_workspaces_for_user(user.id).await?;
    let chosen = match input.workspace.as_deref().map(str::trim) {
        None => workspaces.first(),
        Some(wanted) => workspaces
            .iter()
            .find(|(ws, _)| ws.name.eq_ignore_ascii_case(wanted) || ws.slug.as_str() == wanted),
    };
    if let Some((ws, role)) = chosen {
        return Ok(Outcome {
            user,
            workspace: ws.clone(),
            role: *role,
            created_user: false,
            created_workspace: false,
        });
    }
    if let Some(wanted) = input
        .workspace
        .as_deref()
        .filter(|_| !workspaces.is_empty())
    {
        let names: Vec<&str> = workspaces.iter().map(|(ws, _)| ws.name.as_str()).collect();
        anyhow::bail!(
            "workspace: {} is not a member of {wanted:?}; their workspaces: {}",
            email.as_str(),
            names.join(", ")
        );
    }
    // A user who belongs to no workspace at all gets a new one, as a new owner would.
    let new = new_workspace(input.workspace.as_deref())?;
    let workspace = store
        .create_workspace(&new, user.id)
        .await
        .map_err(|e| slug_taken(e, &new))?;
    crate::skills::builtin::seed(store, workspace.id).await?;
    Ok(Outcome {
        user,
        workspace,
        role: Role::Owner,
        created_user: false,
        created_workspace: true,
    })
}

async fn create_owner(
    store: &dyn Store,
    email: &Email,
    input: &Bootstrap,
) -> anyhow::Result<Outcome> {
    // The length rule is for new passwords: an existing owner's older, shorter password still works.
    crate::auth::check_password(input.password.expose())?;
    let new_ws = new_workspace(input.workspace.as_deref())?;
    let default_name = email.as_str().split('@').next().unwrap_or_default();
    let display_name = members::display_name(input.name.as_deref().unwrap_or(default_name))?;
    let password = input.password.clone();
    let password_hash =
        tokio::task::spawn_blocking(move || crate::auth::hash_password(password.expose()))
            .await
            .context("password hashing failed")??;
    let new_user = NewUser {
        email: email.clone(),
        display_name,
        password_hash,
    };
    let (user, workspace) = store
        .create_owner_and_workspace(&new_user, &new_ws)
        .await
        .map_err(|e| slug_taken(e, &new_ws))?;
    crate::skills::builtin::seed(store, workspace.id).await?;
    Ok(Outcome {
        user,
        workspace,
        role: Role::Owner,
        created_user: true,
        created_workspace: true,
    })
}

fn new_workspace(name: Option<&str>) -> anyhow::Result<NewWorkspace> {
    let name = name.unwrap_or(DEFAULT_WORKSPACE);
    let (slug, prefix) = members::slug_and_prefix(name);
    NewWorkspace::parse(name, &slug, &prefix)
        .map_err(|e| anyhow::anyhow!("workspace: {}", e.message))
}

fn slug_taken(e: store::Error, ws: &NewWorkspace) -> anyhow::Error {
    match e {
        store::Error::Conflict { constraint } if constraint == "workspace_slug_key" => {
            anyhow::anyhow!(
                "workspace: another workspace already uses the slug {:?}; choose another --workspace name",
                ws.slug.as_str()
            )
        }
        store::Error::Conflict { constraint } if constraint == "app_user_email_key" => {
            anyhow::anyhow!("email: an account was created concurrently; run the command again")
        }
        other => anyhow::Error::new(other).context("cannot create the owner and workspace"),
    }
}

/// Mints a token exactly as `service::tokens::create` does: only its hash and prefix are stored.
async fn mint(store: &dyn Store, outcome: &Outcome, name: &str) -> anyhow::Result<Secret> {
    let secret = crate::auth::new_secret(crate::auth::API_TOKEN_KIND);
    let new = NewApiToken {
        workspace_id: outcome.workspace.id,
        user_id: outcome.user.id,
        name: name.to_owned(),
        prefix: secret.prefix,
        token_hash: secret.hash,
        run_id: None,
    };
    store
        .create_api_token(&new)
        .await
        .context("cannot store the API token")?;
    Ok(Secret(secret.secret))
}

fn report(o: &Outcome, token: &Secret, json: bool) -> anyhow::Result<()> {
    let ws = &o.workspace;
    if json {
        return print_json(&serde_json::json!({
            "email": o.user.email.as_str(),
            "user_created": o.created_user,
            "workspace": ws.slug.as_str(),
            "workspace_name": ws.name,
            "workspace_created": o.created_workspace,
            "issue_prefix": ws.issue_prefix.as_str(),
            "token": token.expose(),
        }));
    }
    let user_verb = if o.created_user { "created" } else { "found" };
    let ws_verb = if o.created_workspace {
        "created"
    } else {
        "using"
    };
    println!("{user_verb} user {}", o.user.email.as_str());
    println!(
        "{ws_verb} workspace {} ({}, issue keys {}-1, {}-2, …) as {}",
        clean(&ws.name),
        ws.slug.as_str(),
        ws.issue_prefix.as_str(),
        ws.issue_prefix.as_str(),
        o.role
    );
    println!("new API token (shown once; `muster login --token` takes it):");
    println!("{}", token.expose());
    Ok(())
}
