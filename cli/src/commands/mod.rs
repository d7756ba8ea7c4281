//! The I/O edge: read the cluster or a file, call the pure modules, write the result.

mod maintenance;
mod nodes;
mod scope;
mod wait;
mod workspaces;

use std::io::Write;

use crate::cluster::connect;
use crate::error::{Error, Result, status_code};
use crate::flags::{Cli, Command, Maintenance, Nodes, Workspaces};

pub async fn run(cli: Cli) -> Result<()> {
    let format = cli.output;
    let cluster = &cli.cluster;
    match cli.command {
        Command::Maintenance(Maintenance::Start(start)) => {
            // Flags are checked before connecting: a usage error never waits on the network.
            let window = maintenance::window_to_start(start)?;
            maintenance::start(connect(cluster).await?.0, window, format).await
        }
        Command::Maintenance(Maintenance::Stop { name }) => {
            maintenance::stop(connect(cluster).await?.0, &name, format).await
        }
        Command::Maintenance(Maintenance::Status { name }) => {
            maintenance::status(connect(cluster).await?.0, name.as_deref(), format).await
        }
        // `-f` needs no cluster: the file alone is evaluated.
        Command::Maintenance(Maintenance::Next(next)) => {
            let client = match next.file {
                Some(_) => None,
                None => Some(connect(cluster).await?.0),
            };
            maintenance::next(client, next, format).await
        }
        Command::Maintenance(Maintenance::Wait(w)) => {
            wait::drained(
                connect(cluster).await?.0,
                &w.name,
                w.node.as_deref(),
                w.timeout,
            )
            .await
        }
        Command::Maintenance(Maintenance::Pause { name }) => {
            scope::set_paused(connect(cluster).await?.0, &name, true).await
        }
        Command::Maintenance(Maintenance::Resume { name }) => {
            scope::set_paused(connect(cluster).await?.0, &name, false).await
        }
        Command::Maintenance(Maintenance::Skip(skip)) => {
            // The flag is checked before connecting: a usage error never waits on the network.
            let target = match &skip.on {
                Some(text) => crate::skip::Target::parse_on(text)
                    .map_err(|e| crate::error::Error::Usage(format!("--on: {e}")))?,
                None => crate::skip::Target::Next,
            };
            maintenance::skip(connect(cluster).await?.0, &skip, &target, format).await
        }
        Command::Maintenance(Maintenance::Preview(p)) => {
            scope::preview(connect(cluster).await?.0, p, format).await
        }
        Command::Nodes(Nodes::Clean) => nodes::clean(connect(cluster).await?.0).await,
        Command::Workspaces(Workspaces::List {
            namespace,
            all_namespaces,
        }) => {
            let (client, default_namespace) = connect(cluster).await?;
            let scope = match (all_namespaces, namespace) {
                (true, _) => None,
                (false, namespace) => Some(namespace.unwrap_or(default_namespace)),
            };
            workspaces::list(client, scope.as_deref(), format).await
        }
        Command::Workspaces(Workspaces::Postpone(postpone)) => {
            let (client, default_namespace) = connect(cluster).await?;
            let namespace = postpone.namespace.clone().unwrap_or(default_namespace);
            workspaces::postpone(client, &namespace, &postpone).await
        }
    }
}

/// Writes to stdout; a closed pipe (`lifeguard ... | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            context: "writing to stdout".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// A read of lifeguard's resources failed: a 404 on a list means the CRD is missing.
fn read_error(kind: &str, context: String, e: kube::Error) -> Error {
    if status_code(&e) == Some(404) {
        return Error::Failed(format!(
            "{context}: the {kind} CRD is not installed in this cluster (kubectl apply -f manifests/crds/)"
        ));
    }
    Error::kube(context, e)
}
