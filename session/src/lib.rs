//! The fan's web session (server only): who is signed in, and their
//! waiting-room admissions. The one place that reads or writes session
//! keys; the JSON API, the server functions and the plain-HTML pages all
//! resolve the current user here. A crate of its own so the JSON API need
//! not reach into the UI crate for it.

use frontrow_engine::{Access, Admission, Engine, PresaleAccess};
use frontrow_model::{AppError, ErrorKind, EventId, SalePhase, User, UserId};
use tower_sessions::Session;

/// The signed-in user's id.
const USER_KEY: &str = "user_id";
/// The account's session epoch at sign-in (sessions from before the
/// account's sessions were ended carry an older one; none reads as 0).
const EPOCH_KEY: &str = "session_epoch";
/// A random value admission tokens are bound to, so a token copied into
/// another session is refused.
const BINDING_KEY: &str = "admission_binding";

fn admission_key(event_id: EventId) -> String {
    format!("admission:{}", event_id.as_uuid().simple())
}

fn presale_key(event_id: EventId) -> String {
    format!("presale:{}", event_id.as_uuid().simple())
}

fn queue_key(event_id: EventId) -> String {
    format!("queue:{}", event_id.as_uuid().simple())
}

fn store_error(e: impl std::fmt::Display) -> AppError {
    tracing::error!(error = %e, "session store failed");
    AppError::unavailable()
}

/// The signed-in user, if any.
pub async fn current_user(session: &Session, engine: &Engine) -> Result<Option<User>, AppError> {
    let Some(user_id) = session.get::<UserId>(USER_KEY).await.map_err(store_error)? else {
        return Ok(None);
    };
    let epoch = session.get::<i32>(EPOCH_KEY).await.map_err(store_error)?.unwrap_or_default();
    Ok(engine.session_user(user_id, epoch).await?)
}

/// The signed-in user, or 401.
pub async fn signed_in_user(session: &Session, engine: &Engine) -> Result<User, AppError> {
    current_user(session, engine).await?.ok_or_else(AppError::unauthenticated)
}

/// Signs `user` in on this session, under a fresh session id (defeats
/// session fixation).
pub async fn sign_in(session: &Session, engine: &Engine, user: &User) -> Result<(), AppError> {
    let epoch = engine.session_epoch(user.user_id).await?;
    session.cycle_id().await.map_err(store_error)?;
    session.insert(USER_KEY, user.user_id).await.map_err(store_error)?;
    session.insert(EPOCH_KEY, epoch).await.map_err(store_error)?;
    // Made now, with the sign-in's own write, so that joining a queue or
    // asking for one's place writes nothing to the session. A session that
    // has one keeps it: admissions already bound to it stay good.
    if session.get::<String>(BINDING_KEY).await.map_err(store_error)?.is_none() {
        session.insert(BINDING_KEY, new_binding()).await.map_err(store_error)?;
    }
    Ok(())
}

/// The cookie that marks a client as one an account signed in from before
/// (its owner gets in while others guessing at the account wait).
pub const DEVICE_COOKIE: &str = "frontrow_device";

/// Checks the password (counted against the client's address and the
/// account or its known device) and signs the account in on this session.
/// Answers the user and the `Set-Cookie` value that keeps this client known.
pub async fn sign_in_with_password(
    session: &Session,
    engine: &Engine,
    email: &str,
    password: &str,
    request: &http::request::Parts,
    secure: bool,
) -> Result<(User, String), AppError> {
    use frontrow_engine::accounts::sign_in::{ClientAddress, SignInClient};
    let device = request
        .headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == DEVICE_COOKIE)
        .map(|(_, value)| value.to_owned());
    let client = SignInClient { address: request.extensions.get::<ClientAddress>().map(|a| a.0), device };
    let signed_in = engine.authenticate(email, password, &client).await?;
    sign_in(session, engine, &signed_in.user).await?;
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{DEVICE_COOKIE}={}; Path=/; Max-Age=31536000; HttpOnly; SameSite=Lax{secure}", signed_in.device);
    Ok((signed_in.user, cookie))
}

/// A signed-in session for `user` written straight to `store`, for load
/// runs that need many signed-in fans without a sign-in each. Answers the
/// session id, the session cookie's value.
pub async fn create_signed_in<S: tower_sessions::SessionStore>(
    store: &S,
    user: &User,
    lifetime: tower_sessions::cookie::time::Duration,
) -> Result<String, AppError> {
    let mut record = tower_sessions::session::Record {
        id: tower_sessions::session::Id::default(),
        data: [(USER_KEY.to_owned(), serde_json::json!(user.user_id)), (BINDING_KEY.to_owned(), serde_json::json!(new_binding()))]
            .into_iter()
            .collect(),
        expiry_date: tower_sessions::cookie::time::OffsetDateTime::now_utc() + lifetime,
    };
    store.create(&mut record).await.map_err(store_error)?;
    Ok(record.id.to_string())
}

/// Ends the session here and, through the change feed, in what every other
/// instance keeps of it.
pub async fn sign_out(session: &Session, engine: &Engine) -> Result<(), AppError> {
    let id = session.id();
    session.flush().await.map_err(store_error)?;
    if let Some(id) = id {
        engine.announce_session_end(&id.to_string()).await?;
    }
    Ok(())
}

/// The session's binding value, created on first use.
pub async fn binding(session: &Session) -> Result<String, AppError> {
    if let Some(binding) = session.get::<String>(BINDING_KEY).await.map_err(store_error)? {
        return Ok(binding);
    }
    let binding = new_binding();
    session.insert(BINDING_KEY, &binding).await.map_err(store_error)?;
    Ok(binding)
}

fn new_binding() -> String {
    hex::encode(rand::random::<[u8; 16]>())
}

/// The fan's admission to `event_id` from a token they present: `None`
/// without one (an event whose waiting room is on then refuses the hold),
/// 403 `not_admitted` with one that does not verify for them and this session.
pub async fn admission(
    session: &Session,
    engine: &Engine,
    event_id: EventId,
    fan: UserId,
    token: Option<&str>,
) -> Result<Option<Admission>, AppError> {
    let Some(token) = token else { return Ok(None) };
    let binding = binding(session).await?;
    engine
        .admission(token, event_id, fan, &binding)
        .map(Some)
        .map_err(|reason| AppError::new(ErrorKind::NotAdmitted, format!("admission refused: {reason}")))
}

/// Everything that lets this fan hold seats of an event: the admission
/// from the token they present, and the presale code their session
/// remembers for it.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    pub admission: Option<Admission>,
    pub presale: Option<PresaleAccess>,
}

impl Pass {
    pub fn access(&self) -> Access<'_> {
        Access { admission: self.admission.as_ref(), presale: self.presale.as_ref() }
    }
}

/// The fan's [`Pass`] to `event_id`: their admission (see [`admission`])
/// and the presale code this session entered for it.
pub async fn pass(session: &Session, engine: &Engine, event_id: EventId, fan: UserId, token: Option<&str>) -> Result<Pass, AppError> {
    let admission = admission(session, engine, event_id, fan, token).await?;
    Ok(Pass { admission, presale: presale_access(session, event_id).await? })
}

/// The presale code this session entered for `event_id`, if any.
pub async fn presale_access(session: &Session, event_id: EventId) -> Result<Option<PresaleAccess>, AppError> {
    let code = session.get::<uuid::Uuid>(&presale_key(event_id)).await.map_err(store_error)?;
    Ok(code.map(|code_id| PresaleAccess::remembered(event_id, code_id)))
}

/// Checks a presale code the fan typed (guesses are throttled per fan and
/// per address) and remembers it for the event's holds.
pub async fn enter_presale_code(
    session: &Session,
    engine: &Engine,
    fan: &User,
    event_id: EventId,
    code: &str,
    address: Option<std::net::IpAddr>,
) -> Result<frontrow_model::PresalePass, AppError> {
    let (access, pass) = engine.enter_presale_code(event_id, fan.user_id, code, address).await?;
    session.insert(&presale_key(event_id), access.code_id()).await.map_err(store_error)?;
    Ok(pass)
}

/// What the presale code this session entered lets its fan do now, if it
/// still opens the presale.
pub async fn presale_pass(session: &Session, engine: &Engine, event_id: EventId) -> Result<Option<frontrow_model::PresalePass>, AppError> {
    match presale_access(session, event_id).await? {
        Some(access) => Ok(engine.presale_pass(&access).await?),
        None => Ok(None),
    }
}

/// Remembers an admitted fan's admission and queue tokens, so the
/// server-rendered seat map can hand them to the seat picker. A fan still
/// waiting changes nothing in the session (no write per join or poll).
pub async fn remember_admission(session: &Session, event_id: EventId, queue_token: &str, admission_token: Option<&str>) -> Result<(), AppError> {
    if let Some(token) = admission_token {
        session.insert(&queue_key(event_id), queue_token).await.map_err(store_error)?;
        session.insert(&admission_key(event_id), token).await.map_err(store_error)?;
    }
    Ok(())
}

/// An admission the session keeps for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredAdmission {
    pub admission_token: String,
    pub queue_token: Option<String>,
    /// Which sale's queue let the fan in.
    pub phase: SalePhase,
}

/// The fan's stored admission to the event, if it still verifies.
pub async fn stored_admission(session: &Session, engine: &Engine, event_id: EventId, fan: UserId) -> Result<Option<StoredAdmission>, AppError> {
    let token = session.get::<String>(&admission_key(event_id)).await.map_err(store_error)?;
    let queue_token = session.get::<String>(&queue_key(event_id)).await.map_err(store_error)?;
    let Some(token) = token else { return Ok(None) };
    Ok(admission(session, engine, event_id, fan, Some(&token)).await.ok().flatten().map(|a| StoredAdmission {
        admission_token: token,
        queue_token,
        phase: a.phase(),
    }))
}

/// Which sale's queue this session's fan waits in for `event` now: the
/// presale's while they have entered a code for a presale still to run
/// before the public sale, else the public sale's.
pub async fn queue_phase(session: &Session, event: &frontrow_model::Event) -> Result<SalePhase, AppError> {
    let now = chrono::Utc::now();
    let presale_ahead = event.sale_opens_at > now && event.presales.iter().any(|p| p.ends_at > now);
    if presale_ahead && presale_access(session, event.event_id).await?.is_some() {
        return Ok(SalePhase::Presale);
    }
    Ok(SalePhase::Public)
}

/// Where the fan stands in the event's queue; an admitted fan's token is
/// remembered for the server-rendered seat map. Someone else's queue token
/// (they travel in URLs) reads as unknown.
pub async fn queue_view(
    session: &Session,
    engine: &Engine,
    fan: &User,
    event_id: EventId,
    queue_token: &str,
) -> Result<frontrow_model::QueueView, AppError> {
    let binding = binding(session).await?;
    let view = engine.queue_status(event_id, queue_token, fan.user_id, &binding).await?;
    remember_admission(session, event_id, queue_token, view.admission_token.as_deref()).await?;
    Ok(view)
}

/// Joins the fan to the queue of the event's sale they may wait for now
/// ([`queue_phase`]) and answers where they stand (an admitted fan coming
/// back is remembered, as by [`queue_view`]).
pub async fn join_queue(session: &Session, engine: &Engine, fan: &User, event_id: EventId) -> Result<frontrow_model::QueueView, AppError> {
    let binding = binding(session).await?;
    let event = engine.board().event(event_id).await?.facts().ok_or_else(AppError::not_found)?;
    let phase = queue_phase(session, &event).await?;
    let view = engine.join_queue(event_id, phase, fan.user_id, &binding).await?;
    remember_admission(session, event_id, &view.queue_token, view.admission_token.as_deref()).await?;
    Ok(view)
}

/// Where a page of a waiting-room event sends a fan who may not see its
/// seats yet (sign in, or the queue), and the admitted fan's stored
/// admission. An admission from the presale's queue lets the fan in only
/// during the presale. Events without a waiting room let everyone look.
pub async fn waiting_room_gate(
    session: &Session,
    engine: &Engine,
    event: &frontrow_model::Event,
    user: Option<&User>,
) -> Result<(Option<String>, Option<StoredAdmission>), AppError> {
    let id = event.event_id;
    if !event.waiting_room_enabled {
        return Ok((None, None));
    }
    match user {
        None => Ok((Some(format!("/signin?next=/events/{id}/queue")), None)),
        Some(u) => {
            let phase = queue_phase(session, event).await?;
            match stored_admission(session, engine, id, u.user_id).await? {
                Some(found) if found.phase == phase => Ok((None, Some(found))),
                _ => Ok((Some(format!("/events/{id}/queue")), None)),
            }
        }
    }
}
