//! The live feeds' frames: what the seat-map socket and the waiting-room
//! socket send. The server serialises these types and the browser reads
//! the same types back.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::event::SeatStatus;
use crate::queue::QueueState;

/// One seat's status in a frame. Diffs carry the seat's version too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SeatChange<'a> {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub seat_id: Cow<'a, str>,
    pub status: SeatStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// A frame of `GET /api/v1/events/{id}/live`. `version` is the newest seat
/// version (the contract's); `epoch` and `seq` are what a viewer hands back
/// to resume (`?epoch=…&since=…`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveFrame<'a> {
    Snapshot {
        version: i64,
        // Any u32; documented as such (utoipa's u32 reads as int32).
        #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0, maximum = 4294967295_i64))]
        epoch: u32,
        seq: u64,
        #[serde(borrow)]
        seats: Vec<SeatChange<'a>>,
    },
    Diff {
        version: i64,
        // Any u32; documented as such (utoipa's u32 reads as int32).
        #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0, maximum = 4294967295_i64))]
        epoch: u32,
        seq: u64,
        #[serde(borrow)]
        changes: Vec<SeatChange<'a>>,
    },
}

impl<'a> LiveFrame<'a> {
    /// Where a viewer resumes from after this frame, and its seats.
    pub fn into_parts(self) -> (u32, u64, Vec<SeatChange<'a>>) {
        match self {
            LiveFrame::Snapshot { epoch, seq, seats, .. } => (epoch, seq, seats),
            LiveFrame::Diff { epoch, seq, changes, .. } => (epoch, seq, changes),
        }
    }
}

/// A frame of the waiting room's socket, sent after each admission round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueFrame {
    pub state: QueueState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_seconds: Option<i64>,
    #[serde(default)]
    pub draw_pending: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_in_the_contract_shape() {
        let frame = LiveFrame::Diff {
            version: 7,
            epoch: 1,
            seq: 2,
            changes: vec![SeatChange { seat_id: "A-1-1".into(), status: SeatStatus::Held, version: Some(7) }],
        };
        let text = serde_json::to_string(&frame).unwrap();
        assert_eq!(
            text,
            r#"{"type":"diff","version":7,"epoch":1,"seq":2,"changes":[{"seat_id":"A-1-1","status":"held","version":7}]}"#
        );
        assert_eq!(serde_json::from_str::<LiveFrame>(&text).unwrap(), frame);
    }
}
