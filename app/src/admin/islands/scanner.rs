use frontrow_model::{CheckinResult, ErrorKind, EventId};
use leptos::prelude::*;
use leptos::task::spawn_local;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::admin::actions::{check_in, load_event_stats};
use crate::client::browser::{sleep, window};

/// What the door shows after a scan: a word, large, in a colour, and the detail.
#[derive(Debug, Clone, PartialEq)]
struct Verdict {
    class: &'static str,
    headline: &'static str,
    detail: String,
}

fn verdict(answer: Result<CheckinResult, frontrow_model::AppError>) -> Verdict {
    match answer {
        Ok(r) => Verdict { class: "admitted", headline: "Admitted", detail: r.seat_label },
        Err(e) => match e.kind {
            ErrorKind::AlreadyCheckedIn { checked_in_at } => Verdict {
                class: "refused",
                headline: "Already used",
                detail: format!("This ticket was admitted at {}", checked_in_at.format("%H:%M:%S UTC on %e %b")),
            },
            ErrorKind::TicketRefunded => {
                Verdict { class: "refused", headline: "Refunded", detail: "This ticket was refunded or its event cancelled".into() }
            }
            ErrorKind::WrongEvent { .. } => Verdict { class: "refused", headline: "Wrong event", detail: "This ticket is for another event".into() },
            ErrorKind::UnknownTicket => Verdict { class: "refused", headline: "Unknown ticket", detail: "No ticket has this code".into() },
            _ => Verdict { class: "error", headline: "Try again", detail: e.message },
        },
    }
}

/// Starts the camera and reads QR codes with the browser's BarcodeDetector,
/// where the browser has one; calls `found` with each code read.
fn start_camera(found: impl Fn(String) + Clone + 'static, camera: RwSignal<&'static str>) {
    let win = window();
    let detector_class = js_sys::Reflect::get(&win, &JsValue::from_str("BarcodeDetector")).ok().filter(|v| v.is_function());
    let Some(detector_class) = detector_class else {
        camera.set("unsupported");
        return;
    };
    let Ok(media) = win.navigator().media_devices() else {
        camera.set("unsupported");
        return;
    };
    let options = js_sys::Object::new();
    let formats = js_sys::Array::of1(&JsValue::from_str("qr_code"));
    let _ = js_sys::Reflect::set(&options, &JsValue::from_str("formats"), &formats);
    let Ok(detector) = js_sys::Reflect::construct(detector_class.unchecked_ref::<js_sys::Function>(), &js_sys::Array::of1(&options)) else {
        camera.set("unsupported");
        return;
    };
    let constraints = web_sys::MediaStreamConstraints::new();
    let video_constraints = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&video_constraints, &JsValue::from_str("facingMode"), &JsValue::from_str("environment"));
    constraints.set_video(&video_constraints);
    let Ok(promise) = media.get_user_media_with_constraints(&constraints) else {
        camera.set("unsupported");
        return;
    };
    spawn_local(async move {
        let Ok(stream) = wasm_bindgen_futures::JsFuture::from(promise).await else {
            camera.set("denied");
            return;
        };
        let Some(video) = crate::client::browser::element("scanner-video").and_then(|v| v.dyn_into::<web_sys::HtmlVideoElement>().ok()) else {
            return;
        };
        video.set_src_object(stream.dyn_ref::<web_sys::MediaStream>());
        let _ = video.play();
        camera.set("on");
        let detect = js_sys::Reflect::get(&detector, &JsValue::from_str("detect")).ok().and_then(|f| f.dyn_into::<js_sys::Function>().ok());
        let Some(detect) = detect else { return };
        let mut last = String::new();
        loop {
            sleep(300).await;
            let Ok(promise) = detect.call1(&detector, &video) else { continue };
            let Ok(codes) = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::from(promise)).await else { continue };
            let codes = js_sys::Array::from(&codes);
            if let Some(code) = codes
                .get(0)
                .dyn_into::<js_sys::Object>()
                .ok()
                .and_then(|c| js_sys::Reflect::get(&c, &JsValue::from_str("rawValue")).ok())
                .and_then(|v| v.as_string())
            {
                // The same code in front of the camera is one scan.
                if code != last {
                    last = code.clone();
                    found(code);
                }
            }
        }
    });
}

/// The door's scanner: the camera where the browser can read QR codes, and
/// a typed code always; the verdict large and coloured, and the event's
/// checked-in count.
#[cfg_attr(any(feature = "ssr", feature = "staff"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "staff")), component)]
pub fn Scanner(events: Vec<(EventId, String)>) -> impl IntoView {
    let event = RwSignal::new(events.first().map(|e| e.0));
    let code = RwSignal::new(String::new());
    let result = RwSignal::new(None::<Verdict>);
    let checked_in = RwSignal::new(None::<i64>);
    let camera = RwSignal::new("off");
    let ready = RwSignal::new(false);
    Effect::new(move |_| ready.set(true));

    let scan = move |typed: String| {
        let at = event.get_untracked();
        spawn_local(async move {
            let answer = check_in(typed, at).await;
            result.set(Some(verdict(answer)));
            if let Some(at) = at {
                if let Ok(stats) = load_event_stats(at).await {
                    checked_in.set(Some(stats.checked_in));
                }
            }
        });
    };
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let typed = code.get_untracked();
        code.set(String::new());
        if !typed.trim().is_empty() {
            scan(typed);
        }
    };
    view! {
        <div class="scanner" data-ready=move || ready.get().to_string()>
            <form class="scan-form" on:submit=submit>
                <label>"Door of"
                    <select id="door-event" on:change=move |ev| event.set(event_target_value(&ev).parse().ok())>
                        {events.into_iter().map(|(id, name)| view! { <option value=id.to_string()>{name}</option> }).collect_view()}
                    </select>
                </label>
                <label>"Ticket code" <input id="ticket-code" autocomplete="off" autocapitalize="characters" maxlength="64"
                    prop:value=move || code.get() on:input=move |ev| code.set(event_target_value(&ev))/></label>
                <button class="primary" type="submit">"Check in"</button>
                <button type="button" id="camera-button" on:click=move |_| start_camera(scan, camera)>"Use the camera"</button>
            </form>
            <p class="hint" role="status">{move || match camera.get() {
                "on" => "Camera on: hold a ticket's QR code up to it.",
                "unsupported" => "This browser cannot read QR codes with the camera: type the code.",
                "denied" => "The camera was not allowed: type the code.",
                _ => "Type the code, or use the camera where the browser can.",
            }}</p>
            <video id="scanner-video" class="scanner-video" muted playsinline aria-hidden="true"></video>
            <div class="verdict-area" role="status" aria-live="assertive">
                {move || result.get().map(|v| view! {
                    <div class=format!("verdict {}", v.class)>
                        <p class="headline">{v.headline}</p>
                        <p class="detail">{v.detail}</p>
                    </div>
                })}
            </div>
            <p class="checked-in">{move || checked_in.get().map(|n| format!("{n} checked in at this event"))}</p>
        </div>
    }
}
