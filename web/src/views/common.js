// Pieces shared by the views.
import { h } from '../dom.js';
import { localTime, utc, labelPairs } from '../format.js';
import { stateUrl } from '../state.js';

// A time in local time, with UTC on hover; a <time> element.
export function timeEl(t) {
  if (!t) return h('span', { class: 'muted' }, '–');
  const d = new Date(t);
  return h('time', { datetime: Number.isNaN(d.getTime()) ? '' : d.toISOString(), title: utc(d) }, localTime(d));
}

export const STATE_NAMES = {
  alert: 'Alert', pre_alert: 'Pre-alert', no_data: 'No data', normal: 'OK', resolved: 'Resolved', cancelled: 'Cancelled',
  abandoned: 'Abandoned', stored: 'Stored',
};

export function stateBadge(state, severity) {
  const s = state || 'normal';
  const label = STATE_NAMES[s] || s;
  return h('span', { class: `badge state-${s}`, title: severity ? `${label}, ${severity}` : label },
    label, severity && s !== 'normal' ? h('span', { class: 'sev' }, ` · ${severity}`) : null);
}

// "risk-control · 2025-11 · fraud · total" with the full key on hover.
export function seriesLabel(labels, key) {
  const pairs = labelPairs(labels);
  return h('span', { class: 'series-label', title: key || '' },
    pairs.map(([k, v], i) => [
      i ? h('span', { class: 'sep', 'aria-hidden': 'true' }, ' · ') : null,
      h('span', { class: `lbl lbl-${k}` }, h('span', { class: 'lk' }, `${k}=`), v),
    ]));
}

export function seriesLink(state, id, content) {
  return h('a', { href: stateUrl({ ...state, view: 'series', id }), 'data-nav': '' }, content);
}

export function panel(title, ...body) {
  return h('section', { class: 'panel' }, h('h2', null, title), ...body);
}

export function emptyState(text, hint) {
  return h('div', { class: 'empty' }, h('p', null, text), hint ? h('p', { class: 'hint' }, hint) : null);
}

export function errorState(e) {
  const text = e?.describe ? e.describe() : String(e?.message || e);
  return h('div', { class: 'error-box', role: 'alert' }, text);
}

// Runs fn only when the JSON of data differs from the last call's (keeps focus and scroll in
// tables that poll).
export function changed(holder, key, data) {
  const json = JSON.stringify(data);
  if (holder[key] === json) return false;
  holder[key] = json;
  return true;
}
