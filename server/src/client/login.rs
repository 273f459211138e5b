//! `muster login` and `muster logout`: check a server and token, and keep them in the config file.

use anyhow::Context as _;
use serde_json::Value;

use super::{Client, Remote, config, output, shape};

/// Checks the server and token with `GET /api/v1/me`, stores them, and says who and where.
pub async fn login(remote: &Remote) -> anyhow::Result<()> {
    let path = config::path(remote.config_dir.as_deref())?;
    let stored = config::load(&path)?.unwrap_or_default();
    let server = remote.server.clone().or(stored.server).context(
        "which server? pass --server URL (or set MUSTER_URL), e.g. --server http://127.0.0.1:7777",
    )?;
    let token = remote.token.clone().context(
        "pass --token TOKEN (or set MUSTER_TOKEN): create one on the Tokens page or with `muster admin bootstrap`",
    )?;
    let client = Client::new(&server, token)?;
    let me = client.get("/api/v1/me").await?;
    config::save(
        &path,
        &config::Stored {
            server: Some(client.base().to_owned()),
            token: Some(client.token().clone()),
        },
    )?;
    if remote.json {
        let mut out = me;
        out["server"] = Value::String(client.base().to_owned());
        return output::print_json(&out);
    }
    let me: output::Me = shape(&me)?;
    println!(
        "logged in to {} as {} <{}> in workspace {} ({}, {})",
        client.base(),
        output::clean(&me.name),
        output::clean(&me.email),
        output::clean(&me.workspace_name),
        me.workspace,
        me.role
    );
    println!("saved to {}", path.display());
    Ok(())
}

/// Forgets the stored token (the server URL stays, for the next `muster login --token`).
pub fn logout(remote: &Remote) -> anyhow::Result<()> {
    let path = config::path(remote.config_dir.as_deref())?;
    let removed = match config::load(&path)? {
        Some(mut stored) if stored.token.is_some() => {
            stored.token = None;
            config::save(&path, &stored)?;
            true
        }
        _ => false,
    };
    if remote.json {
        return output::print_json(&serde_json::json!({ "logged_out": removed }));
    }
    if removed {
        println!(
            "logged out: the token was removed from {} (it stays valid on the server until revoked on the Tokens page)",
            path.display()
        );
    } else {
        println!("not logged in; nothing to remove");
    }
    Ok(())
}
