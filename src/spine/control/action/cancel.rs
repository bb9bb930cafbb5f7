//! Which goals a `CancelGoal` request selects, and the return code, as rcl_action decides.

use hiroz::action::{GoalId, GoalStatus, Time};

/// `action_msgs/srv/CancelGoal` return codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum CancelCode {
    None = 0,
    Rejected = 1,
    UnknownGoalId = 2,
    GoalTerminated = 3,
}

/// Selects the goals to cancel for a request `(goal_id, stamp)`:
/// zero id and zero stamp cancel every goal; a zero id with a stamp cancels the goals accepted
/// at or before it; an id cancels that goal, plus (with a stamp) those accepted at or before
/// the stamp. Only goals still running are selected. The code is `UnknownGoalId` or
/// `GoalTerminated` when a named goal is missing or finished and nothing else was selected.
pub fn select_for_cancel<'a>(
    goals: impl IntoIterator<Item = (GoalId, Time, GoalStatus)> + 'a,
    goal_id: GoalId,
    stamp: Time,
) -> (CancelCode, Vec<GoalId>) {
    let by_id = goal_id.is_valid();
    let by_stamp = stamp.sec != 0 || stamp.nanosec != 0;
    let mut named: Option<GoalStatus> = None;
    let mut selected = Vec::new();
    for (id, accepted, status) in goals {
        let is_named = by_id && id == goal_id;
        if is_named {
            named = Some(status);
        }
        let matches = if !by_id && !by_stamp {
            true
        } else {
            is_named || (by_stamp && (accepted.sec, accepted.nanosec) <= (stamp.sec, stamp.nanosec))
        };
        if matches && status.is_active() {
            selected.push(id);
        }
    }
    let code = if !selected.is_empty() {
        CancelCode::None
    } else if by_id && named.is_none() {
        CancelCode::UnknownGoalId
    } else if by_id && named.is_some_and(|s| s.is_terminal()) {
        CancelCode::GoalTerminated
    } else {
        CancelCode::None
    };
    (code, selected)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(sec: i32) -> Time {
        Time { sec, nanosec: 0 }
    }
    fn id(n: u8) -> GoalId {
        GoalId::from_bytes([n; 16])
    }
    fn goals() -> Vec<(GoalId, Time, GoalStatus)> {
        vec![
            (id(1), t(10), GoalStatus::Executing),
            (id(2), t(20), GoalStatus::Executing),
            (id(3), t(30), GoalStatus::Succeeded),
            (id(4), t(40), GoalStatus::Accepted),
        ]
    }

    #[test]
    fn zero_id_and_stamp_cancels_all_running() {
        let (code, sel) = select_for_cancel(goals(), GoalId::from_bytes([0; 16]), t(0));
        assert_eq!(code, CancelCode::None);
        assert_eq!(sel, vec![id(1), id(2), id(4)]);
    }

    #[test]
    fn stamp_only_cancels_goals_accepted_before_it() {
        let (_, sel) = select_for_cancel(goals(), GoalId::from_bytes([0; 16]), t(20));
        assert_eq!(sel, vec![id(1), id(2)]);
    }

    #[test]
    fn id_and_stamp_cancel_both() {
        let (_, sel) = select_for_cancel(goals(), id(4), t(10));
        assert_eq!(sel, vec![id(1), id(4)]);
    }

    #[test]
    fn named_goal_codes() {
        assert_eq!(
            select_for_cancel(goals(), id(2), t(0)),
            (CancelCode::None, vec![id(2)])
        );
        assert_eq!(
            select_for_cancel(goals(), id(9), t(0)).0,
            CancelCode::UnknownGoalId
        );
        assert_eq!(
            select_for_cancel(goals(), id(3), t(0)).0,
            CancelCode::GoalTerminated
        );
        // Cancel-all with nothing running is not an error.
        let done = vec![(id(3), t(30), GoalStatus::Succeeded)];
        assert_eq!(
            select_for_cancel(done, GoalId::from_bytes([0; 16]), t(0)),
            (CancelCode::None, vec![])
        );
    }
}
