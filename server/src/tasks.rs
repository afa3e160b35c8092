//! Background tasks: the reaper, the waiting lists' offers, reconciliation and the mail sender, each on its own interval,
//! the waiting room's admission loop, and the listener that keeps live seat
//! maps current; all stop when the server shuts down.

use std::time::Duration;

use frontrow_model::SalePhase;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_sessions::session_store::ExpiredDeletion;

use crate::state::AppState;

const REAPER_BATCH: i64 = 1000;
const MAIL_BATCH: u32 = 50;
/// Well within the 5 s after which a silent instance's claims lapse.
const HEARTBEAT: Duration = Duration::from_secs(1);

pub struct Tasks(JoinSet<()>);

impl Tasks {
    pub async fn join(mut self) {
        while self.0.join_next().await.is_some() {}
    }
}

pub fn spawn(state: AppState, shutdown: CancellationToken) -> Tasks {
    let mut set = JoinSet::new();
    let reaper_every = Duration::from_millis(state.settings.reaper_interval_ms.max(50));
    let reconcile_every = Duration::from_millis(state.settings.reconcile_interval_ms.max(50));

    let engine = state.engine.clone();
    set.spawn(every(reaper_every, shutdown.clone(), move || {
        let engine = engine.clone();
        async move {
            if let Err(e) = engine.reap_once(REAPER_BATCH).await {
                tracing::warn!(error = %e, "reaper round failed");
            }
        }
    }));

    // The waiting lists: seats that came back are offered in order. Every
    // instance tries; a per-event lock lets one act at a time.
    let engine = state.engine.clone();
    set.spawn(every(reaper_every, shutdown.clone(), move || {
        let engine = engine.clone();
        async move {
            if let Err(e) = engine.offer_waitlist_seats().await {
                tracing::warn!(error = %e, "waiting-list round failed");
            }
        }
    }));

    // Alive: this instance's claims on checkouts stay its own.
    let engine = state.engine.clone();
    set.spawn(every(HEARTBEAT, shutdown.clone(), move || {
        let engine = engine.clone();
        async move {
            if let Err(e) = engine.heartbeat().await {
                tracing::warn!(error = %e, "heartbeat failed");
            }
        }
    }));

    let engine = state.engine.clone();
    let stop = shutdown.clone();
    set.spawn(async move { engine.listen(stop.cancelled_owned()).await });

    // The waiting room's admission loop: every instance tries each event
    // every half second; the queue's lease and its one-round-per-second rule
    // make exactly one of them admit, once a second. A presale's queue has
    // rounds of its own (none once the public sale opens, or where nobody
    // queued for it).
    let engine = state.engine.clone();
    let instance = state.instance_id;
    set.spawn(every(Duration::from_millis(state.settings.admission_interval_ms.max(50)), shutdown.clone(), move || {
        let engine = engine.clone();
        async move {
            let events = match engine.waiting_room_events().await {
                Ok(events) => events,
                Err(e) => return tracing::warn!(error = %e, "admission loop could not list events"),
            };
            for event_id in events {
                for phase in [SalePhase::Presale, SalePhase::Public] {
                    match engine.admission_round(event_id, phase, instance).await {
                        Ok(Some(round)) if round.admitted > 0 => tracing::info!(%event_id, ?phase, ?round, "admitted"),
                        Ok(_) => {}
                        Err(e) => tracing::warn!(%event_id, ?phase, error = %e, "admission round failed"),
                    }
                }
            }
        }
    }));

    // The rate limiters forget clients that have gone quiet.
    let by_address = [state.rate_limiter.clone(), state.account_limiter.clone()];
    let by_fan = state.fan_limiter.clone();
    set.spawn(every(Duration::from_secs(60), shutdown.clone(), move || {
        for limiter in by_address.iter().flatten() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        if let Some(limiter) = &by_fan {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        async {}
    }));

    // Sign-in counts quiet for a day are forgotten.
    let engine = state.engine.clone();
    set.spawn(every(Duration::from_secs(3600), shutdown.clone(), move || {
        let engine = engine.clone();
        async move {
            if let Err(e) = engine.forget_sign_in_attempts().await {
                tracing::warn!(error = %e, "forgetting old sign-in counts failed");
            }
        }
    }));

    // Expired sessions are deleted hourly (and once at start).
    let sessions = state.sessions.clone();
    set.spawn(every(Duration::from_secs(3600), shutdown.clone(), move || {
        let sessions = sessions.clone();
        async move {
            if let Err(e) = sessions.database().delete_expired().await {
                tracing::warn!(error = %e, "deleting expired sessions failed");
            }
        }
    }));

    // The mail outbox: every instance sends what is due; each mail is
    // claimed by one of them.
    let engine = state.engine.clone();
    let site = state.settings.site_url();
    set.spawn(every(Duration::from_millis(state.settings.mail_interval_ms.max(50)), shutdown.clone(), move || {
        let engine = engine.clone();
        let site = site.clone();
        async move {
            if let Err(e) = engine.send_due_mail(MAIL_BATCH, &site).await {
                tracing::warn!(error = %e, "mail round failed");
            }
        }
    }));

    let engine = state.engine.clone();
    set.spawn(every(reconcile_every, shutdown, move || {
        let engine = engine.clone();
        async move {
            match engine.reconcile_once().await {
                Ok(stats) if stats != Default::default() => tracing::info!(?stats, "reconciliation round"),
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "reconciliation round failed"),
            }
        }
    }));
    Tasks(set)
}

async fn every<F, Fut>(period: Duration, shutdown: CancellationToken, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut ticker = tokio::time::interval(period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => round().await,
        }
    }
}
