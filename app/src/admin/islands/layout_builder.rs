use frontrow_model::{NewSection, Placement, Stage, StandingArea};
use leptos::prelude::*;
use leptos::task::spawn_local;
use serde::{Deserialize, Serialize};

use crate::admin::actions::{preview_layout, save_layout};
use crate::admin::layout_spec::templates::TemplateChoice;
use crate::admin::layout_spec::{sections, SectionSpec};
use crate::client::browser::navigate;

/// A layout as JSON export and import carry it: the sections with where
/// they sit, and what they face. (A bare list of sections imports too.)
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
enum LayoutJson {
    Venue {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stage: Option<Stage>,
        sections: Vec<NewSection>,
    },
    Sections(Vec<NewSection>),
}

/// The template form's numbers, as typed.
#[derive(Debug, Clone, PartialEq)]
struct TemplateForm {
    kind: String,
    sections: String,
    lower_rows: String,
    upper_rows: String,
    floor: String,
}

impl TemplateForm {
    fn choice(&self) -> TemplateChoice {
        let n = |text: &str, default: u32| text.trim().parse().unwrap_or(default);
        match self.kind.as_str() {
            "theatre" => TemplateChoice::Theatre { stalls_rows: n(&self.lower_rows, 20), circle_rows: n(&self.upper_rows, 10) },
            "arena" => TemplateChoice::Arena { sides: n(&self.sections, 3), floor: n(&self.floor, 4000) },
            _ => TemplateChoice::Bowl {
                sections: n(&self.sections, 40),
                lower_rows: n(&self.lower_rows, 30),
                upper_rows: n(&self.upper_rows, 36),
                floor: n(&self.floor, 0),
            },
        }
    }
}

fn number(text: &str) -> f64 {
    text.trim().parse().unwrap_or(0.0)
}

/// One section's fields; a placed section also where it sits, a standing
/// area its capacity and size instead of rows.
#[component]
fn SectionFields(index: usize, spec: SectionSpec, specs: RwSignal<Vec<SectionSpec>>, open: bool) -> impl IntoView {
    let edit = move |f: &dyn Fn(&mut SectionSpec)| {
        specs.update(|s| {
            if let Some(spec) = s.get_mut(index) {
                f(spec)
            }
        })
    };
    let place = move |f: fn(&mut Placement, f64), value: String| {
        edit(&|s: &mut SectionSpec| {
            let mut p = s.placement.unwrap_or(Placement { x: 0.0, y: 0.0, rotation: 0.0, curve: None });
            f(&mut p, number(&value));
            s.placement = Some(p);
        })
    };
    let area = move |f: fn(&mut StandingArea, String), value: String| {
        edit(&|s: &mut SectionSpec| {
            if let Some(a) = s.standing.as_mut() {
                f(a, value.clone());
            }
        })
    };
    let summary = match &spec.standing {
        Some(a) => format!("Section {}: standing area, {} places", spec.name, a.capacity),
        None => format!("Section {}: {} rows of {} seats", spec.name, spec.rows, spec.seats),
    };
    let p = spec.placement;
    let coordinate = move |v: Option<f64>| v.map(|v| format!("{v:.0}")).unwrap_or_default();
    view! {
        <details class="section-spec" data-section-index=index open=open>
            <summary>{summary}</summary>
            <label>"Name (letters and digits)" <input name="section" maxlength="16" value=spec.name.clone()
                on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.name = v.clone()) }/></label>
            <label class="check"><input name="standing" type="checkbox" checked=spec.standing.is_some()
                on:change=move |ev| { let on = event_target_checked(&ev); edit(&|s| s.standing = on.then(|| StandingArea { capacity: 1000, tier: "Floor".into(), width: 600.0, depth: 400.0 })) }/>
                " Standing area (places sold by count)"</label>
            {match spec.standing.clone() {
                Some(a) => view! {
                    <label>"Capacity" <input name="capacity" type="number" min="1" max="50000" value=a.capacity
                        on:change=move |ev| area(|a, v| a.capacity = v.parse().unwrap_or(1), event_target_value(&ev))/></label>
                    <label>"Tier" <input name="standing-tier" maxlength="32" value=a.tier.clone()
                        on:change=move |ev| area(|a, v| a.tier = v, event_target_value(&ev))/></label>
                    <label>"Width" <input name="width" type="number" value=a.width
                        on:change=move |ev| area(|a, v| a.width = number(&v), event_target_value(&ev))/></label>
                    <label>"Depth" <input name="depth" type="number" value=a.depth
                        on:change=move |ev| area(|a, v| a.depth = number(&v), event_target_value(&ev))/></label>
                }.into_any(),
                None => view! {
                    <label>"Rows" <input name="rows" type="number" min="1" max="500" value=spec.rows
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.rows = v.parse().unwrap_or(1)) }/></label>
                    <label>"Seats per row" <input name="seats" type="number" min="1" max="1000" value=spec.seats
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.seats = v.parse().unwrap_or(1)) }/></label>
                    <label>"Seats added per row going back" <input name="growth" type="number" min="0" max="20" value=spec.growth
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.growth = v.parse().unwrap_or(0)) }/></label>
                    <label class="check"><input name="letters" type="checkbox" checked=spec.letters
                        on:change=move |ev| { let on = event_target_checked(&ev); edit(&|s| s.letters = on) }/>" Rows lettered A, B, C…"</label>
                    <label>"Aisles after seats (e.g. 10 20)" <input name="aisles" value=spec.aisles_after.clone()
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.aisles_after = v.clone()) }/></label>
                    <label>"Tiers by row (e.g. 1-5 Premium, 6-25 Standard)" <input name="tiers" value=spec.tiers.clone()
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.tiers = v.clone()) }/></label>
                    <label>"Wheelchair spaces (e.g. 25: 1 2)" <input name="wheelchair" value=spec.wheelchair.clone()
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.wheelchair = v.clone()) }/></label>
                    <label>"Companion seats (e.g. 25: 3)" <input name="companion" value=spec.companion.clone()
                        on:change=move |ev| { let v = event_target_value(&ev); edit(&|s| s.companion = v.clone()) }/></label>
                }.into_any(),
            }}
            <fieldset class="placement">
                <legend>"On the map (empty: the default grid)"</legend>
                <label>"x" <input name="x" type="number" value=coordinate(p.map(|p| p.x)) on:change=move |ev| place(|p, v| p.x = v, event_target_value(&ev))/></label>
                <label>"y" <input name="y" type="number" value=coordinate(p.map(|p| p.y)) on:change=move |ev| place(|p, v| p.y = v, event_target_value(&ev))/></label>
                <label>"Rotation (degrees)" <input name="rotation" type="number" value=coordinate(p.map(|p| p.rotation))
                    on:change=move |ev| place(|p, v| p.rotation = v, event_target_value(&ev))/></label>
                <label>"Curve: rows bend around a point this far ahead (empty: straight)" <input name="curve" type="number" value=coordinate(p.and_then(|p| p.curve))
                    on:change=move |ev| place(|p, v| p.curve = (v > 0.0).then_some(v), event_target_value(&ev))/></label>
            </fieldset>
            <button type="button" on:click=move |_| specs.update(|s| { if s.len() > 1 { s.remove(index); } })>"Remove section"</button>
        </details>
    }
}

/// The layout generator: a template to start from, sections described by a
/// few fields each (where they sit on the map included), standing areas, a
/// live preview of the seat map, JSON import and export, and save.
#[cfg_attr(any(feature = "ssr", feature = "staff"), island)]
#[cfg_attr(not(any(feature = "ssr", feature = "staff")), component)]
pub fn LayoutBuilder() -> impl IntoView {
    let name = RwSignal::new("Main hall".to_owned());
    let specs = RwSignal::new(vec![SectionSpec::default()]);
    let stage = RwSignal::new(None::<Stage>);
    let template = RwSignal::new(TemplateForm {
        kind: "bowl".into(),
        sections: "24".into(),
        lower_rows: "20".into(),
        upper_rows: "20".into(),
        floor: "0".into(),
    });
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
        let shown_stage = stage.get();
        match plan() {
            Err(e) => message.set(Some(("error", e))),
            Ok(plan) => spawn_local(async move {
                match preview_layout(plan, shown_stage).await {
                    Ok(svg) => {
                        preview.set(svg);
                        message.set(None);
                    }
                    Err(e) => message.set(Some(("error", e.message))),
                }
            }),
        }
    });
    let export = move || {
        let json = plan().ok().map(|sections| LayoutJson::Venue { stage: stage.get(), sections });
        json.and_then(|j| serde_json::to_string_pretty(&j).ok()).unwrap_or_default()
    };
    let save = move |_| {
        let Ok(plan) = plan() else { return };
        busy.set(true);
        let (layout_name, layout_stage) = (name.get_untracked(), stage.get_untracked());
        spawn_local(async move {
            match save_layout(layout_name, plan, layout_stage).await {
                Ok(_) => navigate("/admin/layouts"),
                Err(e) => message.set(Some(("error", e.message))),
            }
            busy.set(false);
        });
    };
    let import = move |_| match serde_json::from_str::<LayoutJson>(&import_text.get_untracked()) {
        Ok(LayoutJson::Venue { stage: s, sections }) => {
            stage.set(s);
            imported.set(Some(sections));
        }
        Ok(LayoutJson::Sections(sections)) => imported.set(Some(sections)),
        Err(e) => message.set(Some(("error", format!("That is not a layout as JSON: {e}")))),
    };
    let use_template = move |_| {
        let form = template.get_untracked();
        let built = form.choice().build();
        imported.set(None);
        stage.set(Some(built.stage));
        specs.set(built.sections);
        name.set(match form.kind.as_str() {
            "theatre" => "Theatre".into(),
            "arena" => "Arena".into(),
            _ => "Stadium".into(),
        });
    };
    let template_field = move |label: &'static str, id: &'static str, get: fn(&TemplateForm) -> String, set: fn(&mut TemplateForm, String)| {
        view! {
            <label>{label} <input id=id type="number" min="0" prop:value=move || template.with(get)
                on:input=move |ev| { let v = event_target_value(&ev); template.update(|t| set(t, v)) }/></label>
        }
    };

    view! {
        <div class="layout-builder" data-ready=move || ready.get().to_string()>
            <fieldset class="template">
                <legend>"Start from a template"</legend>
                <label>"Template "
                    <select id="template-kind" on:change=move |ev| { let v = event_target_value(&ev); template.update(|t| t.kind = v) }>
                        <option value="bowl" selected>"Stadium bowl (sections in a ring, lower and upper tier)"</option>
                        <option value="arena">"Arena (a standing floor, seats on three or four sides)"</option>
                        <option value="theatre">"Theatre (stalls fanned around the stage, a circle)"</option>
                    </select>
                </label>
                {template_field("Sections in a ring (arena: sides)", "template-sections", |t| t.sections.clone(), |t, v| t.sections = v)}
                {template_field("Rows: lower tier (theatre: stalls)", "template-lower", |t| t.lower_rows.clone(), |t, v| t.lower_rows = v)}
                {template_field("Rows: upper tier (theatre: circle)", "template-upper", |t| t.upper_rows.clone(), |t, v| t.upper_rows = v)}
                {template_field("Standing floor places (0: none)", "template-floor", |t| t.floor.clone(), |t, v| t.floor = v)}
                <button type="button" id="use-template" on:click=use_template>"Use this template"</button>
            </fieldset>
            <label>"Layout name" <input id="layout-name" maxlength="200" prop:value=move || name.get() on:input=move |ev| name.set(event_target_value(&ev))/></label>
            {move || imported.get().is_some().then(|| view! {
                <p class="msg info">"Using the imported layout. " <button type="button" on:click=move |_| imported.set(None)>"Back to the form"</button></p>
            })}
            <div class="sections">
                // A few sections open; a stadium's dozens folded, one line each.
                {move || {
                    let all = specs.get();
                    let open = all.len() <= 3;
                    all.into_iter().enumerate().map(|(index, spec)| view! { <SectionFields index spec specs open/> }).collect_view()
                }}
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
                <label>"This layout" <textarea id="export-json" rows="8" readonly prop:value=export></textarea></label>
                <label>"Paste a layout to import" <textarea id="import-json" rows="8" prop:value=move || import_text.get()
                    on:input=move |ev| import_text.set(event_target_value(&ev))></textarea></label>
                <button type="button" id="import-button" on:click=import>"Import"</button>
            </details>
        </div>
    }
}
