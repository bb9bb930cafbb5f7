//! What the engine refuses before any work starts.

use crate::protocol::TaskContext;
use crate::{
    aem::{Catalog, MeshStatus},
    cognition::delegation::MAX_DEPTH,
    interfaces::AolTaskGoal,
};

/// Why a goal is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("the instruction is empty")]
    EmptyInstruction,
    #[error("domain {0:?} is not `<mesh>/<role>`")]
    MalformedDomain(String),
    #[error("no expert {0} in the catalog (known: {1})")]
    UnknownDomain(String, String),
    #[error("mesh {0} is parked: its experts cannot be spawned")]
    ParkedMesh(String),
    #[error("delegation depth {0} exceeds the limit of {MAX_DEPTH}")]
    TooDeep(u8),
    #[error("{0}")]
    BadContext(String),
    #[error("no domain given and the router found no expert for it")]
    NoRouter,
    #[error("{by} may not delegate to {domain} (its peers: {peers})")]
    NotAPeer {
        by: String,
        domain: String,
        peers: String,
    },
}

impl Rejection {
    /// A stable, machine-readable name for the refusal (the `code` of the
    /// `iron/msg/GoalRejection` the engine publishes).
    pub fn code(&self) -> &'static str {
        match self {
            Rejection::EmptyInstruction => "empty_instruction",
            Rejection::MalformedDomain(_) => "malformed_domain",
            Rejection::UnknownDomain(..) => "unknown_domain",
            Rejection::ParkedMesh(_) => "parked_mesh",
            Rejection::TooDeep(_) => "too_deep",
            Rejection::BadContext(_) => "bad_context",
            Rejection::NoRouter => "no_router",
            Rejection::NotAPeer { .. } => "not_a_peer",
        }
    }

    /// Whether a goal refused with `code` was refused for the expert it named (malformed,
    /// unknown, or in a parked mesh) rather than for itself: the same goal with no domain, left
    /// to routing, may be taken.
    pub fn is_about_domain(code: &str) -> bool {
        [
            Rejection::MalformedDomain(String::new()),
            Rejection::UnknownDomain(String::new(), String::new()),
            Rejection::ParkedMesh(String::new()),
        ]
        .iter()
        .any(|r| r.code() == code)
    }
}

/// Checks a goal against the catalog, and reads its context (a malformed one is refused with
/// why). A goal with an empty domain passes (it will be routed).
pub fn validate(goal: &AolTaskGoal, catalog: &Catalog) -> Result<TaskContext, Rejection> {
    if goal.instruction.trim().is_empty() {
        return Err(Rejection::EmptyInstruction);
    }
    if goal.depth > MAX_DEPTH {
        return Err(Rejection::TooDeep(goal.depth));
    }
    let context =
        TaskContext::parse(&goal.context_json).map_err(|e| Rejection::BadContext(e.to_string()))?;
    // An expert's delegation reaches only its peers (mesh scope and its own exceptions).
    if let Some(by) = &context.delegated_by {
        let peers = catalog.peers(by);
        if !peers.contains(&goal.domain) {
            return Err(Rejection::NotAPeer {
                by: by.to_string(),
                domain: goal.domain.clone(),
                peers: peers.join(", "),
            });
        }
    }
    if !goal.domain.is_empty() {
        check_domain(&goal.domain, catalog)?;
    }
    Ok(context)
}

/// Checks that `domain` names an expert goals can go to: `<mesh>/<role>`, in the catalog, its
/// mesh not parked (the refusals [`Rejection::is_about_domain`] names).
pub fn check_domain(domain: &str, catalog: &Catalog) -> Result<(), Rejection> {
    let Some((mesh, role)) = domain.split_once('/') else {
        return Err(Rejection::MalformedDomain(domain.to_string()));
    };
    if mesh.is_empty() || role.is_empty() || role.contains('/') {
        return Err(Rejection::MalformedDomain(domain.to_string()));
    }
    if catalog
        .mesh(mesh)
        .is_some_and(|m| m.status == MeshStatus::Parked)
    {
        return Err(Rejection::ParkedMesh(mesh.to_string()));
    }
    if catalog.expert(domain).is_none() {
        let known: Vec<&str> = catalog.spawnable().map(|e| e.id.as_str()).collect();
        return Err(Rejection::UnknownDomain(
            domain.to_string(),
            known.join(", "),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        crate::aem::compile(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/aem"
        )))
        .expect("shipped meshes compile")
    }

    fn goal(domain: &str, instruction: &str) -> AolTaskGoal {
        AolTaskGoal {
            domain: domain.into(),
            instruction: instruction.into(),
            ..Default::default()
        }
    }

    #[test]
    fn refuses_what_cannot_run() {
        let c = catalog();
        assert_eq!(
            validate(&goal("newsroom/analyst", " "), &c),
            Err(Rejection::EmptyInstruction)
        );
        assert!(matches!(
            validate(&goal("newsroom/nobody", "x"), &c),
            Err(Rejection::UnknownDomain(..))
        ));
        assert!(matches!(
            validate(&goal("analyst", "x"), &c),
            Err(Rejection::MalformedDomain(_))
        ));
        let parked = c
            .meshes
            .values()
            .find(|m| m.status == MeshStatus::Parked)
            .expect("a parked mesh ships");
        let parked_role = c
            .experts
            .values()
            .find(|e| e.id.starts_with(&format!("{}/", parked.name)))
            .unwrap();
        assert_eq!(
            validate(&goal(&parked_role.id, "x"), &c),
            Err(Rejection::ParkedMesh(parked.name.clone()))
        );
        let mut deep = goal("newsroom/analyst", "x");
        deep.depth = MAX_DEPTH + 1;
        assert_eq!(validate(&deep, &c), Err(Rejection::TooDeep(MAX_DEPTH + 1)));
        let mut ctx = goal("newsroom/analyst", "x");
        ctx.context_json = "[1]".into();
        assert!(matches!(validate(&ctx, &c), Err(Rejection::BadContext(_))));
        assert_eq!(
            validate(&goal("newsroom/analyst", "check this"), &c),
            Ok(TaskContext::default())
        );
        assert_eq!(
            validate(&goal("", "route me"), &c),
            Ok(TaskContext::default())
        );
    }

    #[test]
    fn a_delegation_reaches_only_the_delegators_peers() {
        let c = catalog();
        let peer = c
            .peers("newsroom/analyst")
            .first()
            .expect("the analyst has peers")
            .clone();
        let mut goal = AolTaskGoal {
            domain: peer,
            instruction: "check this".into(),
            depth: 1,
            context_json: r#"{"delegated_by": "newsroom/analyst"}"#.into(),
            ..AolTaskGoal::default()
        };
        assert!(validate(&goal, &c).is_ok());
        goal.domain = "newsroom/publisher".into();
        assert!(
            matches!(validate(&goal, &c), Err(Rejection::NotAPeer { .. })),
            "the analyst's capabilities remove the publisher from its peers"
        );
        goal.context_json = r#"{"delegated_by": "nobody/here"}"#.into();
        goal.domain = "newsroom/analyst".into();
        assert!(matches!(
            validate(&goal, &c),
            Err(Rejection::NotAPeer { .. })
        ));
    }
}
