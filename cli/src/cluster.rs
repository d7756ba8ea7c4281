//! Connecting the way kubectl does: `--kubeconfig`, else `KUBECONFIG`, else
//! `~/.kube/config`, else the in-cluster service account; `--context` picks a context.

use std::path::PathBuf;

use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Default, Args)]
pub struct ClusterArgs {
    /// Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use (default: its current context)
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
}

/// A client and the context's default namespace.
pub async fn connect(args: &ClusterArgs) -> Result<(Client, String)> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        ..KubeConfigOptions::default()
    };
    let config = match (&args.kubeconfig, &args.context) {
        (Some(path), _) => match Kubeconfig::read_from(path) {
            Ok(kubeconfig) => Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
        (None, Some(_)) => Config::from_kubeconfig(&options)
            .await
            .map_err(|e| e.to_string()),
        (None, None) => Config::infer().await.map_err(|e| e.to_string()),
    }
    .map_err(|e| Error::Failed(format!("no usable cluster configuration: {e}")))?;
    let namespace = config.default_namespace.clone();
    let client = Client::try_from(config)
        .map_err(|e| Error::kube("cannot create a client from the kubeconfig", e))?;
    Ok((client, namespace))
}
