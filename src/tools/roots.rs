//! The directories an expert may change files in, from its catalog entry: for every local
//! server it may write through (a write-class tool granted, or a delivery channel), the
//! `workspace/` roots its arguments name (see [`crate::aem::roots`]), expanded from the
//! environment, checked to resolve inside `<project>/workspace/`, and created. Gate 2 is
//! granted exactly these.
//!
//! A `${IRON_SCRATCH}` root is the task's scratch workspace, which the expert makes when its
//! mesh declares a `workspace:` (see `crate::cognition::expert::scratch`) and names in the
//! environment it gives its servers; [`scrub_env`] keeps an inherited `IRON_SCRATCH` from
//! reaching a server, so without a scratch such a server does not start.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::env::{EnvError, EnvMap, expand};
use super::paths::{PathPolicy, resolve_path};
use crate::aem::roots::{Root, SCRATCH_VAR, WORKSPACE_DIR, writable_roots, write_tools};
use crate::aem::{Catalog, ExpertEntry, ServerDescriptor};

/// A directory one server may write in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedRoot {
    /// Server name.
    pub server: String,
    /// The directory, resolved (it exists).
    pub dir: PathBuf,
}

/// Why a server's root cannot be granted; the expert refuses to start.
#[derive(Debug, Error)]
pub enum RootError {
    /// The catalog lets the server write outside the workspace (a catalog built by an
    /// older compiler).
    #[error("server `{server}`: argument `{arg}` {why}; rebuild the catalog")]
    NotAllowed {
        /// Server name.
        server: String,
        /// The argument.
        arg: String,
        /// Why.
        why: String,
    },
    /// A reference in the root could not be expanded.
    #[error("server `{server}`: root `{arg}`: {source}")]
    Expand {
        /// Server name.
        server: String,
        /// The argument.
        arg: String,
        /// The cause.
        #[source]
        source: EnvError,
    },
    /// The expanded root resolves outside `<project>/workspace/`.
    #[error(
        "server `{server}` would write in {} (`{arg}`), which is outside {}; point it at a directory under `{WORKSPACE_DIR}/`",
        dir.display(),
        workspace.display()
    )]
    Outside {
        /// Server name.
        server: String,
        /// The argument.
        arg: String,
        /// Where it resolves.
        dir: PathBuf,
        /// The project's workspace directory.
        workspace: PathBuf,
    },
    /// The project or state directory could not be resolved.
    #[error("gate 2 cannot protect {}: {source}", dir.display())]
    Project {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The root could not be resolved or created.
    #[error("server `{server}`: root {}: {source}", dir.display())]
    Io {
        /// Server name.
        server: String,
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The roots `expert` may write in, each created if missing. `project` is the directory
/// relative roots are taken against (the expert's working directory).
pub fn granted_roots(
    expert: &ExpertEntry,
    catalog: &Catalog,
    project: &Path,
    env: &EnvMap,
) -> Result<Vec<GrantedRoot>, RootError> {
    let Some(mesh) = catalog.mesh(&expert.mesh) else {
        return Ok(Vec::new());
    };
    let writers = write_tools(&expert.tools, &expert.delivery, &mesh.delivery).into_keys();
    let io = |server: &str, dir: &Path| {
        let (server, dir) = (server.to_string(), dir.to_path_buf());
        move |source| RootError::Io {
            server,
            dir,
            source,
        }
    };
    let mut granted = Vec::new();
    for server in writers {
        let Some(ServerDescriptor::Local { args, .. }) =
            mesh.servers.get(server).map(|s| &s.descriptor)
        else {
            continue;
        };
        let roots = writable_roots(args).map_err(|o| RootError::NotAllowed {
            server: server.to_string(),
            arg: o.arg,
            why: o.why,
        })?;
        for root in roots {
            let arg = match root {
                Root::Workspace(arg) => arg,
                // The task's scratch, when the workspace layer made one.
                Root::Scratch => {
                    let Some(dir) = env.get(SCRATCH_VAR) else {
                        continue;
                    };
                    let dir = resolve_path(project, Path::new(dir))
                        .map_err(io(server, Path::new(dir)))?;
                    granted.push(GrantedRoot {
                        server: server.to_string(),
                        dir,
                    });
                    continue;
                }
            };
            let expanded = expand(&arg, env).map_err(|source| RootError::Expand {
                server: server.to_string(),
                arg: arg.clone(),
                source,
            })?;
            let workspace = resolve_path(project, Path::new(WORKSPACE_DIR))
                .map_err(io(server, &project.join(WORKSPACE_DIR)))?;
            let dir = resolve_path(project, Path::new(&expanded))
                .map_err(io(server, Path::new(&expanded)))?;
            if !dir.starts_with(&workspace) || dir == workspace {
                return Err(RootError::Outside {
                    server: server.to_string(),
                    arg,
                    dir,
                    workspace,
                });
            }
            std::fs::create_dir_all(&dir).map_err(io(server, &dir))?;
            granted.push(GrantedRoot {
                server: server.to_string(),
                dir,
            });
        }
    }
    Ok(granted)
}

/// Gate 2 of `expert`: the governance of `project` and the compiled catalog in `state_dir`
/// protected, writes allowed only in its [`granted_roots`] (returned too, for the servers'
/// working roots). The expert process and every bridge acting for it build the same one.
pub fn expert_policy(
    expert: &ExpertEntry,
    catalog: &Catalog,
    project: &Path,
    state_dir: &Path,
    env: &EnvMap,
) -> Result<(PathPolicy, Vec<GrantedRoot>), RootError> {
    let granted = granted_roots(expert, catalog, project, env)?;
    let mut policy = PathPolicy::new(project, state_dir).map_err(|source| RootError::Project {
        dir: project.to_path_buf(),
        source,
    })?;
    for root in &granted {
        policy = policy
            .grant_root(&root.dir)
            .map_err(|source| RootError::Io {
                server: root.server.clone(),
                dir: root.dir.clone(),
                source,
            })?;
    }
    Ok((policy, granted))
}

/// The environment a tool server may see: without `IRON_SCRATCH`, which only the workspace
/// layer may set for a task (an inherited one could name the real checkout).
pub fn scrub_env(mut env: EnvMap) -> EnvMap {
    env.remove(SCRATCH_VAR);
    env
}
