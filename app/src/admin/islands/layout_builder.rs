use frontrow_model::NewSection;
use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::admin::actions::{preview_layout, save_layout};
use crate::admin::layout_spec::{sections, SectionSpec};
use crate::client::browser::navigate;

/// The layout generator: sections described by a few fields each, a live
/// preview of the seat map, JSON import and export, and save.
#[island]
pub fn LayoutBuilder() -> impl IntoView {
    let name = RwSignal::new("Main hall".to_owned());
    let specs = RwSignal::new(vec![SectionSpec::default()]);
    // A plan pasted as JSON replaces the form's until cleared.
    let imported = RwSignal::new(None::<Vec<NewSection>>);
    let import_text = RwSignal::new(String::new());
    let preview = RwSignal::new(String::new());
    let message = RwSignal::new(None::<(&'static str, String)>);
    let busy = RwSignal::new(false);
    let ready = RwSignal::new(false);

    let plan = move || -> Result<Vec<NewSection>, String> {
        match imported.get() {
            Some(plan) => Ok(plan),
            None => sections(&specs.get()),
        }
    };
    // Redraw the preview whenever the plan changes.
    Effect::new(move |_| {
        ready.set(true);
        match plan() {
            Err(e) => message.set(Some(("error", e))),
            Ok(plan) => spawn_local(async move {
                match preview_layout(plan).await {
                    Ok(svg) => {
                        preview.set(svg);
                        message.set(None);
                    }
                    Err(e) => message.set(Some(("error", e.message))),
                }
            }),
        }
    });
    let export = move || plan().ok().and_then(|p| serde_json::to_string_pretty(&p).ok()).unwrap_or_default();
    let save = move |_| {
        let Ok(plan) = plan() else { return };
        busy.set(true);
        let layout_name = name.get_untracked();
        spawn_local(async move {
            match save_layout(layout_name, plan).await {
                Ok(_) => navigate("/admin/layouts"),
                Err(e) => message.set(Some(("error", e.message))),
            }
            busy.set(false);
        });
    };
    let import = move |_| match serde_json::from_str::<Vec<NewSection>>(&import_text.get_untracked()) {
        Ok(plan) => imported.set(Some(plan)),
        Err(e) => message.set(Some(("error", format!("That is not a layout's sections as JSON: {e}")))),
    };
    let edit = move |i: usize, f: fn(&mut SectionSpec, String), value: String| specs.update(|s| if let Some(spec) = s.get_mut(i) { f(spec, value) });

    view! {
        <div class="layout-builder" data-ready=move || ready.get().to_string()>
            <label>"Layout name" <input id="layout-name" maxlength="200" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/></label>
            {move || imported.get().is_some().then(|| view! {
                <p class="msg info">"Using the imported layout. " <button type="button" on:click=move |_| imported.set(None)>"Back to the form"</button></p>
            })}
            <div class="sections">
                {move || specs.get().into_iter().enumerate().map(|(i, spec)| view! {
                    <fieldset class="section-spec" data-section-index=i>
                        <legend>{format!("Section {}", spec.name)}</legend>
                        <label>"Name (letters and digits)" <input name="section" maxlength="16" value=spec.name.clone()
                            on:change=move |ev| edit(i, |s, v| s.name = v, event_target_value(&ev))/></label>
                        <label>"Rows" <input name="rows" type="number" min="1" max="500" value=spec.rows
                            on:change=move |ev| edit(i, |s, v| s.rows = v.parse().unwrap_or(1), event_target_value(&ev))/></label>
                        <label>"Seats per row" <input name="seats" type="number" min="1" max="1000" value=spec.seats
                            on:change=move |ev| edit(i, |s, v| s.seats = v.parse().unwrap_or(1), event_target_value(&ev))/></label>
                        <label class="check"><input name="letters" type="checkbox" checked=spec.letters
                            on:change=move |ev| edit(i, |s, v| s.letters = v == "true", event_target_checked(&ev).to_string())/>" Rows lettered A, B, C…"</label>
                        <label>"Aisles after seats (e.g. 10 20)" <input name="aisles" value=spec.aisles_after.clone()
                            on:change=move |ev| edit(i, |s, v| s.aisles_after = v, event_target_value(&ev))/></label>
                        <label>"Tiers by row (e.g. 1-5 Premium, 6-25 Standard)" <input name="tiers" value=spec.tiers.clone()
                            on:change=move |ev| edit(i, |s, v| s.tiers = v, event_target_value(&ev))/></label>
                        <label>"Wheelchair spaces (e.g. 25: 1 2)" <input name="wheelchair" value=spec.wheelchair.clone()
                            on:change=move |ev| edit(i, |s, v| s.wheelchair = v, event_target_value(&ev))/></label>
                        <label>"Companion seats (e.g. 25: 3)" <input name="companion" value=spec.companion.clone()
                            on:change=move |ev| edit(i, |s, v| s.companion = v, event_target_value(&ev))/></label>
                        <button type="button" on:click=move |_| specs.update(|s| { if s.len() > 1 { s.remove(i); } })>"Remove section"</button>
                    </fieldset>
                }).collect_view()}
            </div>
            <p class="actions">
                <button type="button" id="add-section" on:click=move |_| specs.update(|s| {
                    let name = ((b'A' + (s.len() % 26) as u8) as char).to_string();
                    s.push(SectionSpec { name, ..SectionSpec::default() });
                })>"Add section"</button>
                <button class="primary" type="button" id="save-layout" disabled=move || busy.get() on:click=save>"Save layout"</button>
            </p>
            <div class="message" role="status" aria-live="polite">
                {move || message.get().map(|(kind, text)| view! { <p class=format!("msg {kind}")>{text}</p> })}
            </div>
            <h2>"Preview"</h2>
            <div class="map-viewport layout-preview" id="layout-preview" inner_html=move || preview.get()/>
            <details>
                <summary>"Import or export as JSON"</summary>
                <label>"This layout's sections" <textarea id="export-json" rows="8" readonly prop:value=export></textarea></label>
                <label>"Paste sections to import" <textarea id="import-json" rows="8" prop:value=move || import_text.get()
                    on:input=move |ev| import_text.set(event_target_value(&ev))></textarea></label>
                <button type="button" id="import-button" on:click=import>"Import"</button>
            </details>
        </div>
    }
}
