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

/// How many places of one section (or standing area) are free.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SectionCount<'a> {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub section: Cow<'a, str>,
    pub available: i64,
    pub total: i64,
}

/// A frame of `GET /api/v1/events/{id}/live`. `version` is the newest seat
/// version (the contract's); `epoch` and `seq` are what a viewer hands back
/// to resume (`?epoch=…&since=…`). A viewer of one section (`?section=`)
/// gets only that section's seats; a viewer of the venue's overview
/// (`?view=overview`), and of a standing area, gets `counts` instead: the
/// free places of every section that changed (all of them first).
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
    Counts {
        version: i64,
        // Any u32; documented as such (utoipa's u32 reads as int32).
        #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0, maximum = 4294967295_i64))]
        epoch: u32,
        seq: u64,
        #[serde(borrow)]
        sections: Vec<SectionCount<'a>>,
    },
}

impl<'a> LiveFrame<'a> {
    /// Where a viewer resumes from after this frame.
    pub fn position(&self) -> (u32, u64) {
        match self {
            LiveFrame::Snapshot { epoch, seq, .. } | LiveFrame::Diff { epoch, seq, .. } | LiveFrame::Counts { epoch, seq, .. } => (*epoch, *seq),
        }
    }
}

/// A frame of the waiting room's socket, sent after an admission round that
/// changed what the fan sees (far back in line, at most every few seconds).
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
        assert_eq!(text, r#"{"type":"diff","version":7,"epoch":1,"seq":2,"changes":[{"seat_id":"A-1-1","status":"held","version":7}]}"#);
        assert_eq!(serde_json::from_str::<LiveFrame>(&text).unwrap(), frame);
    }
}
