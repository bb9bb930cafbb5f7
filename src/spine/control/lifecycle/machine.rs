//! The ROS 2 managed-node state machine, as rcl_lifecycle defines it (ids and labels of
//! `lifecycle_msgs/msg/State` and `lifecycle_msgs/msg/Transition`). Pure: no I/O, so every
//! path, including error processing, is unit-tested without a network.

use std::fmt;

/// A lifecycle state: the four primary states and the six transition states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum State {
    /// Only ever reported for a node that could not be asked.
    Unknown = 0,
    Unconfigured = 1,
    Inactive = 2,
    Active = 3,
    Finalized = 4,
    Configuring = 10,
    CleaningUp = 11,
    ShuttingDown = 12,
    Activating = 13,
    Deactivating = 14,
    ErrorProcessing = 15,
}

impl State {
    /// Every state a node can report, in id order (what `get_available_states` lists).
    pub const ALL: [State; 11] = [
        State::Unknown,
        State::Unconfigured,
        State::Inactive,
        State::Active,
        State::Finalized,
        State::Configuring,
        State::CleaningUp,
        State::ShuttingDown,
        State::Activating,
        State::Deactivating,
        State::ErrorProcessing,
    ];

    /// The numeric id of `lifecycle_msgs/msg/State`.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The label rclcpp_lifecycle reports.
    pub fn label(self) -> &'static str {
        match self {
            State::Unknown => "unknown",
            State::Unconfigured => "unconfigured",
            State::Inactive => "inactive",
            State::Active => "active",
            State::Finalized => "finalized",
            State::Configuring => "configuring",
            State::CleaningUp => "cleaningup",
            State::ShuttingDown => "shuttingdown",
            State::Activating => "activating",
            State::Deactivating => "deactivating",
            State::ErrorProcessing => "errorprocessing",
        }
    }

    /// The state with this id, if any.
    pub fn from_id(id: u8) -> Option<State> {
        State::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Whether this is one of the four primary (resting) states.
    pub fn is_primary(self) -> bool {
        matches!(
            self,
            State::Unconfigured | State::Inactive | State::Active | State::Finalized
        )
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// What a transition callback decided, as in `rclcpp_lifecycle`'s `CallbackReturn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The transition completed.
    Success,
    /// The transition was refused; the node goes back to where it started.
    Failure,
    /// Something broke; the node enters error processing.
    Error,
}

/// A transition of `lifecycle_msgs/msg/Transition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Transition {
    Create = 0,
    Configure = 1,
    Cleanup = 2,
    Activate = 3,
    Deactivate = 4,
    UnconfiguredShutdown = 5,
    InactiveShutdown = 6,
    ActiveShutdown = 7,
    Destroy = 8,
    OnConfigureSuccess = 10,
    OnConfigureFailure = 11,
    OnConfigureError = 12,
    OnCleanupSuccess = 20,
    OnCleanupFailure = 21,
    OnCleanupError = 22,
    OnActivateSuccess = 30,
    OnActivateFailure = 31,
    OnActivateError = 32,
    OnDeactivateSuccess = 40,
    OnDeactivateFailure = 41,
    OnDeactivateError = 42,
    OnShutdownSuccess = 50,
    OnShutdownFailure = 51,
    OnShutdownError = 52,
    OnErrorSuccess = 60,
    OnErrorFailure = 61,
    OnErrorError = 62,
}

/// One edge of the graph: `transition` moves a node from `start` to `goal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edge {
    pub transition: Transition,
    pub start: State,
    pub goal: State,
}

/// Every edge of the default state machine, in the order rcl registers them.
pub const GRAPH: [Edge; 25] = {
    use State::*;
    use Transition as T;
    const fn e(transition: Transition, start: State, goal: State) -> Edge {
        Edge {
            transition,
            start,
            goal,
        }
    }
    [
        e(T::Configure, Unconfigured, Configuring),
        e(T::OnConfigureSuccess, Configuring, Inactive),
        e(T::OnConfigureFailure, Configuring, Unconfigured),
        e(T::OnConfigureError, Configuring, ErrorProcessing),
        e(T::Cleanup, Inactive, CleaningUp),
        e(T::OnCleanupSuccess, CleaningUp, Unconfigured),
        e(T::OnCleanupFailure, CleaningUp, Inactive),
        e(T::OnCleanupError, CleaningUp, ErrorProcessing),
        e(T::Activate, Inactive, Activating),
        e(T::OnActivateSuccess, Activating, Active),
        e(T::OnActivateFailure, Activating, Inactive),
        e(T::OnActivateError, Activating, ErrorProcessing),
        e(T::Deactivate, Active, Deactivating),
        e(T::OnDeactivateSuccess, Deactivating, Inactive),
        e(T::OnDeactivateFailure, Deactivating, Active),
        e(T::OnDeactivateError, Deactivating, ErrorProcessing),
        e(T::UnconfiguredShutdown, Unconfigured, ShuttingDown),
        e(T::InactiveShutdown, Inactive, ShuttingDown),
        e(T::ActiveShutdown, Active, ShuttingDown),
        e(T::OnShutdownSuccess, ShuttingDown, Finalized),
        e(T::OnShutdownFailure, ShuttingDown, Finalized),
        e(T::OnShutdownError, ShuttingDown, ErrorProcessing),
        e(T::OnErrorSuccess, ErrorProcessing, Unconfigured),
        e(T::OnErrorFailure, ErrorProcessing, Finalized),
        e(T::OnErrorError, ErrorProcessing, Finalized),
    ]
};

impl Transition {
    /// The numeric id of `lifecycle_msgs/msg/Transition`.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The label rcl_lifecycle gives the transition.
    pub fn label(self) -> &'static str {
        use Transition::*;
        match self {
            Create => "create",
            Configure => "configure",
            Cleanup => "cleanup",
            Activate => "activate",
            Deactivate => "deactivate",
            UnconfiguredShutdown | InactiveShutdown | ActiveShutdown => "shutdown",
            Destroy => "destroy",
            OnConfigureSuccess | OnCleanupSuccess | OnActivateSuccess | OnDeactivateSuccess
            | OnShutdownSuccess | OnErrorSuccess => "transition_success",
            OnConfigureFailure | OnCleanupFailure | OnActivateFailure | OnDeactivateFailure
            | OnShutdownFailure | OnErrorFailure => "transition_failure",
            OnConfigureError | OnCleanupError | OnActivateError | OnDeactivateError
            | OnShutdownError | OnErrorError => "transition_error",
        }
    }

    /// Whether a caller may request this transition (the others are internal results).
    pub fn is_requestable(self) -> bool {
        (1..=7).contains(&self.id())
    }

    /// The edge this transition takes, when it starts from `state`.
    pub fn edge_from(self, state: State) -> Option<Edge> {
        GRAPH
            .iter()
            .copied()
            .find(|e| e.transition == self && e.start == state)
    }
}

/// Why a requested transition cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionRefused {
    #[error("no transition with id {id} and label {label:?} exists")]
    Unknown { id: u8, label: String },
    #[error("transition {label:?} is not available from state {state}; available: {available}")]
    NotAvailable {
        label: String,
        state: State,
        available: String,
    },
}

/// The transitions a caller may request from `state` (what `get_available_transitions` lists).
pub fn available_from(state: State) -> impl Iterator<Item = Edge> {
    GRAPH.into_iter().filter(move |e| e.start == state)
}

/// Resolves a `ChangeState` request the way rclcpp does: a non-empty label wins over the id
/// (ROS CLIs leave the id at zero); otherwise the id is looked up. Only requestable
/// transitions starting at `state` are accepted.
pub fn resolve_request(state: State, id: u8, label: &str) -> Result<Edge, TransitionRefused> {
    let available = || {
        available_from(state)
            .filter(|e| e.transition.is_requestable())
            .map(|e| e.transition.label())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found = available_from(state)
        .filter(|e| e.transition.is_requestable())
        .find(|e| {
            if label.is_empty() {
                e.transition.id() == id
            } else {
                e.transition.label() == label
            }
        });
    match found {
        Some(edge) => Ok(edge),
        None => {
            let known = GRAPH.iter().any(|e| {
                e.transition.is_requestable()
                    && (e.transition.label() == label
                        || (label.is_empty() && e.transition.id() == id))
            });
            if known {
                Err(TransitionRefused::NotAvailable {
                    label: if label.is_empty() {
                        id.to_string()
                    } else {
                        label.to_string()
                    },
                    state,
                    available: available(),
                })
            } else {
                Err(TransitionRefused::Unknown {
                    id,
                    label: label.to_string(),
                })
            }
        }
    }
}

/// The edge that completes a transition state with the callback's outcome.
pub fn completion(transition_state: State, outcome: Outcome) -> Option<Edge> {
    use Transition::*;
    let t = match (transition_state, outcome) {
        (State::Configuring, Outcome::Success) => OnConfigureSuccess,
        (State::Configuring, Outcome::Failure) => OnConfigureFailure,
        (State::Configuring, Outcome::Error) => OnConfigureError,
        (State::CleaningUp, Outcome::Success) => OnCleanupSuccess,
        (State::CleaningUp, Outcome::Failure) => OnCleanupFailure,
        (State::CleaningUp, Outcome::Error) => OnCleanupError,
        (State::Activating, Outcome::Success) => OnActivateSuccess,
        (State::Activating, Outcome::Failure) => OnActivateFailure,
        (State::Activating, Outcome::Error) => OnActivateError,
        (State::Deactivating, Outcome::Success) => OnDeactivateSuccess,
        (State::Deactivating, Outcome::Failure) => OnDeactivateFailure,
        (State::Deactivating, Outcome::Error) => OnDeactivateError,
        (State::ShuttingDown, Outcome::Success) => OnShutdownSuccess,
        (State::ShuttingDown, Outcome::Failure) => OnShutdownFailure,
        (State::ShuttingDown, Outcome::Error) => OnShutdownError,
        (State::ErrorProcessing, Outcome::Success) => OnErrorSuccess,
        (State::ErrorProcessing, Outcome::Failure) => OnErrorFailure,
        (State::ErrorProcessing, Outcome::Error) => OnErrorError,
        _ => return None,
    };
    t.edge_from(transition_state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_win_over_ids_as_in_rclcpp() {
        let e = resolve_request(State::Unconfigured, 0, "configure").unwrap();
        assert_eq!(e.transition, Transition::Configure);
        assert_eq!(e.goal, State::Configuring);
        let e = resolve_request(State::Active, 0, "shutdown").unwrap();
        assert_eq!(e.transition, Transition::ActiveShutdown);
        let e = resolve_request(State::Inactive, 3, "").unwrap();
        assert_eq!(e.transition, Transition::Activate);
    }

    #[test]
    fn refuses_unavailable_and_unknown_transitions() {
        assert!(matches!(
            resolve_request(State::Unconfigured, 0, "activate"),
            Err(TransitionRefused::NotAvailable { .. })
        ));
        assert!(matches!(
            resolve_request(State::Unconfigured, 0, "fly"),
            Err(TransitionRefused::Unknown { .. })
        ));
        // Internal transitions cannot be requested, even from their start state.
        assert!(resolve_request(State::Configuring, 10, "").is_err());
        // Nothing leaves finalized.
        assert!(resolve_request(State::Finalized, 0, "configure").is_err());
    }

    #[test]
    fn outcomes_follow_the_default_state_machine() {
        let goal = |s, o| completion(s, o).unwrap().goal;
        assert_eq!(goal(State::Configuring, Outcome::Success), State::Inactive);
        assert_eq!(
            goal(State::Configuring, Outcome::Failure),
            State::Unconfigured
        );
        assert_eq!(
            goal(State::Configuring, Outcome::Error),
            State::ErrorProcessing
        );
        assert_eq!(goal(State::Activating, Outcome::Failure), State::Inactive);
        assert_eq!(goal(State::Deactivating, Outcome::Failure), State::Active);
        assert_eq!(goal(State::CleaningUp, Outcome::Failure), State::Inactive);
        assert_eq!(
            goal(State::ShuttingDown, Outcome::Failure),
            State::Finalized
        );
        assert_eq!(
            goal(State::ErrorProcessing, Outcome::Success),
            State::Unconfigured
        );
        assert_eq!(
            goal(State::ErrorProcessing, Outcome::Error),
            State::Finalized
        );
        assert!(completion(State::Active, Outcome::Success).is_none());
    }

    #[test]
    fn available_transitions_per_primary_state() {
        let labels = |s| {
            available_from(s)
                .map(|e| e.transition.id())
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(State::Unconfigured), vec![1, 5]);
        assert_eq!(labels(State::Inactive), vec![2, 3, 6]);
        assert_eq!(labels(State::Active), vec![4, 7]);
        assert!(labels(State::Finalized).is_empty());
    }
}
