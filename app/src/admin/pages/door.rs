//! The door: scan or type ticket codes.

use frontrow_model::{AppError, StaffEventLine};
use leptos::prelude::*;

use crate::admin::islands::Scanner;
use crate::admin::{refused, Frame};

#[server(prefix = "/_app")]
pub async fn load_door() -> Result<Vec<StaffEventLine>, AppError> {
    let (engine, _) = crate::server::staff().await?;
    Ok(engine.staff_events().await?)
}

#[component]
pub fn CheckinPage() -> impl IntoView {
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                match load_door().await {
                    Err(e) => refused(e, "/admin/checkin"),
                    Ok(events) => {
                        let events = events.into_iter().map(|e| (e.event_id, e.name)).collect();
                        view! { <Frame title="Check-in".to_owned() here="/admin/checkin".to_owned()><Scanner events/></Frame> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}
