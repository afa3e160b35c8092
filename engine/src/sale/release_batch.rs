//! Fans' releases decided many at a time (see [`super::group_commit`]): one
//! statement for every release of a batch, whatever their events. Two
//! batches side by side are safe: each locks its seats in one global order
//! (see [`seats::release`]).

use frontrow_model::HoldState;
use sqlx::PgConnection;

use super::group_commit::{Batch, GroupCommit};
use super::seats::{self, ReleaseRequest};
use crate::error::Result;

pub(crate) struct Releases;

pub(crate) type ReleaseBatcher = GroupCommit<Releases>;

impl Batch for Releases {
    type Request = ReleaseRequest;
    /// The hold's state before (`None`: not this fan's hold) and the seats freed.
    type Outcome = (Option<HoldState>, i64);
    /// One group: releases of any events go together.
    type Key = ();
    const SIZE_METRIC: &'static str = "frontrow_release_batch_size";

    async fn call(connection: &mut PgConnection, _: (), requests: &[ReleaseRequest]) -> Result<Vec<Result<Self::Outcome>>> {
        Ok(seats::release(connection, requests).await?.into_iter().map(Ok).collect())
    }
}
