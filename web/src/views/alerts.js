// Alerts: the active alerts, recent episodes with Acknowledge and Silence, and the silences.
import { h, setChildren } from '../dom.js';
import { get, send } from '../api.js';
import { statValue, selector, parseKey } from '../format.js';
import { stateBadge, seriesLabel, seriesLink, panel, emptyState, timeEl, changed } from './common.js';
import { formDialog } from '../dialogs.js';
import { stateUrl } from '../state.js';

const NAME_KEY = 'tailguard.ackName';

export function alertsView({ app }) {
  const cache = {};
  const local = { showExpired: false };
  const flash = h('div', { class: 'flash', id: 'action-status', role: 'status', 'aria-live': 'polite', hidden: true });
  const active = h('div', { id: 'active-alerts' });
  const episodes = h('div', { id: 'episodes' });
  const silences = h('div', { id: 'silences' });
  const expiredBox = h('input', {
    type: 'checkbox', id: 'show-expired',
    onchange: () => { local.showExpired = expiredBox.checked; cache.silences = null; refresh().catch(showError); },
  });
  const newSilence = h('button', { type: 'button', class: 'secondary', onclick: () => silenceDialog({}) }, 'New silence');
  const el = h('div', { class: 'view view-alerts' },
    h('div', { class: 'toolbar' }, h('h1', null, 'Alerts')),
    flash,
    panel('Active now', active),
    panel('Recent episodes', episodes),
    h('section', { class: 'panel' },
      h('div', { class: 'panel-title-row' }, h('h2', null, 'Silences'),
        h('div', { class: 'panel-tools' }, h('label', { for: 'show-expired' }, expiredBox, ' show expired'), newSilence)),
      silences));

  function say(kind, text) {
    flash.dataset.kind = kind;
    flash.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    setChildren(flash, text, h('button', { type: 'button', class: 'link close', 'aria-label': 'Dismiss', onclick: () => { flash.hidden = true; } }, '×'));
    flash.hidden = false;
  }
  function showError(e) {
    say('error', e?.describe ? e.describe() : String(e?.message || e));
  }

  async function ackDialog(ep) {
    let name = '';
    try { name = localStorage.getItem(NAME_KEY) || ''; } catch { /* private mode */ }
    const v = await formDialog({
      id: 'ack-dialog',
      title: `Acknowledge alert #${ep.id}`,
      message: `${ep.rule} on ${ep.series}`,
      submit: 'Acknowledge',
      fields: [
        { name: 'by', label: 'Your name', required: true, value: name, autocomplete: 'name' },
        { name: 'comment', label: 'Comment', type: 'textarea', placeholder: 'looking into it' },
      ],
    });
    if (!v) return;
    try { localStorage.setItem(NAME_KEY, v.by); } catch { /* private mode */ }
    try {
      await send('POST', `/api/v1/alerts/${encodeURIComponent(ep.id)}/ack`, { by: v.by, comment: v.comment });
      say('ok', `Alert #${ep.id} acknowledged by ${v.by}.`);
    } catch (e) {
      say('error', `Acknowledge failed: ${e.describe ? e.describe() : e.message}`);
    }
    cache.episodes = null;
    await refresh().catch(showError);
  }

  async function silenceDialog(ep) {
    let name = '';
    try { name = localStorage.getItem(NAME_KEY) || ''; } catch { /* private mode */ }
    const labels = ep.labels || parseKey(ep.series || '').labels;
    const v = await formDialog({
      id: 'silence-dialog',
      title: ep.id ? `Silence alert #${ep.id}` : 'New silence',
      message: 'Notifications of alerts whose labels match are muted until the silence ends.',
      submit: 'Create silence',
      fields: [
        {
          name: 'matchers', label: 'Matchers', required: true, value: ep.id ? selector(labels) : '',
          placeholder: '{model="risk-control",stage="total"}', hint: 'A Prometheus selector: {label="value", other=~"regex"}',
        },
        {
          name: 'duration', label: 'Duration', value: '1h', options: ['15m', '30m', '1h', '2h', '4h', '8h', '24h', '7d']
            .map((d) => ({ value: d, label: d })),
        },
        { name: 'created_by', label: 'Your name', required: true, value: name, autocomplete: 'name' },
        { name: 'comment', label: 'Comment', type: 'textarea', required: true, placeholder: 'deploying v2' },
      ],
    });
    if (!v) return;
    try { localStorage.setItem(NAME_KEY, v.created_by); } catch { /* private mode */ }
    try {
      const r = await send('POST', '/api/v1/silences', v);
      say('ok', `Silence #${r?.silence?.id ?? ''} created for ${v.duration}: ${v.matchers}.`);
    } catch (e) {
      say('error', `Silence failed: ${e.describe ? e.describe() : e.message}`);
    }
    cache.silences = null;
    await refresh().catch(showError);
  }

  async function expire(s) {
    try {
      await send('DELETE', `/api/v1/silences/${encodeURIComponent(s.id)}`);
      say('ok', `Silence #${s.id} expired.`);
    } catch (e) {
      say('error', `Expire failed: ${e.describe ? e.describe() : e.message}`);
    }
    cache.silences = null;
    await refresh().catch(showError);
  }

  function drawActive(list) {
    if (!list.length) {
      setChildren(active, emptyState('No active alerts. All series are within their thresholds.'));
      return;
    }
    setChildren(active, h('table', { class: 'grid' },
      h('thead', null, h('tr', null, ['State', 'Rule', 'Series', 'Since', 'Value', 'Threshold']
        .map((t, i) => h('th', { scope: 'col', class: i >= 4 ? 'num' : null }, t)))),
      h('tbody', null, list.map((a) => h('tr', { class: `row-${a.state}` },
        h('td', null, stateBadge(a.state, a.severity)),
        h('td', null, a.rule),
        h('td', null, seriesLink(app.state, a.series_id, seriesLabel(parseKey(a.series).labels, a.series))),
        h('td', null, timeEl(a.since)),
        h('td', { class: 'num strong' }, statValue(a.statistic, a.value, a.unit)),
        h('td', { class: 'num muted' }, statValue(a.statistic, a.threshold, a.unit)))))));
  }

  function drawEpisodes(list) {
    if (list === null) {
      setChildren(episodes, emptyState('Alert history, acknowledgements and silences need the event store.',
        'Set store.path in the gateway configuration.'));
      return;
    }
    if (!list.length) {
      setChildren(episodes, emptyState('No alert episodes recorded yet.'));
      return;
    }
    setChildren(episodes, h('table', { class: 'grid episodes' },
      h('thead', null, h('tr', null,
        ['#', 'State', 'Rule', 'Series', 'Started', 'Ended', 'Value', 'Threshold', 'Acknowledged', 'Actions']
          .map((t, i) => h('th', { scope: 'col', class: i === 6 || i === 7 ? 'num' : null }, t)))),
      h('tbody', null, list.map((ep) => {
        const live = ep.state === 'alert' || ep.state === 'pre_alert';
        return h('tr', { class: `row-${ep.state}${ep.acked_by ? ' acked' : ''}`, dataset: { episode: ep.id } },
          h('td', { class: 'muted' }, String(ep.id)),
          h('td', null, stateBadge(ep.state, ep.severity)),
          h('td', null, ep.rule),
          h('td', null, seriesLink(app.state, ep.series_id, seriesLabel(ep.labels || parseKey(ep.series).labels, ep.series))),
          h('td', null, timeEl(ep.started_at)),
          h('td', null, ep.ended_at ? timeEl(ep.ended_at) : h('span', { class: live ? 'ongoing' : 'muted' }, live ? 'ongoing' : '–')),
          h('td', { class: 'num' }, statValue(ep.statistic, ep.value, ep.unit)),
          h('td', { class: 'num muted' }, statValue(ep.statistic, ep.threshold, ep.unit)),
          h('td', { class: 'acked-cell' }, ep.acked_by
            ? h('span', { title: ep.ack_comment || '' }, '✓ ', ep.acked_by, ' ', timeEl(ep.acked_at),
              ep.ack_comment ? h('span', { class: 'muted comment' }, ` “${ep.ack_comment}”`) : null)
            : h('span', { class: 'muted' }, '–')),
          h('td', { class: 'actions' },
            h('a', {
              class: 'button small secondary diagnosis', href: stateUrl({ ...app.state, view: 'diagnosis', alert: String(ep.id) }),
              'data-nav': '', 'aria-label': `Diagnosis of alert ${ep.id}`,
            }, 'Diagnosis'),
            ep.acked_by ? null : h('button', { type: 'button', class: 'small ack', onclick: () => ackDialog(ep), 'aria-label': `Acknowledge alert ${ep.id}` }, 'Ack'),
            h('button', { type: 'button', class: 'small secondary silence', onclick: () => silenceDialog(ep), 'aria-label': `Silence alert ${ep.id}` }, 'Silence')));
      }))));
  }

  function drawSilences(list, error) {
    if (error) {
      setChildren(silences, emptyState(error));
      return;
    }
    if (!list.length) {
      setChildren(silences, emptyState(local.showExpired ? 'No silences.' : 'No active silences.'));
      return;
    }
    setChildren(silences, h('table', { class: 'grid silences' },
      h('thead', null, h('tr', null, ['#', 'Matchers', 'Starts', 'Ends', 'Created by', 'Comment', 'State', '']
        .map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', null, list.map((s) => h('tr', { class: s.active ? 'row-silence-active' : 'row-expired', dataset: { silence: s.id } },
        h('td', { class: 'muted' }, String(s.id)),
        h('td', null, h('code', null, s.matchers)),
        h('td', null, timeEl(s.starts_at)),
        h('td', null, timeEl(s.ends_at)),
        h('td', null, s.created_by || '–'),
        h('td', { class: 'muted' }, s.comment || ''),
        h('td', null, s.active ? h('span', { class: 'badge state-silenced' }, 'Active') : h('span', { class: 'badge state-normal' }, 'Expired')),
        h('td', null, s.active ? h('button', { type: 'button', class: 'small secondary', onclick: () => expire(s), 'aria-label': `Expire silence ${s.id}` }, 'Expire') : null))))));
  }

  async function refresh() {
    const [alerts, sil] = await Promise.all([
      get('/api/v1/alerts', { limit: 50 }),
      get('/api/v1/silences', local.showExpired ? { expired: 'true' } : {}).catch((e) => ({ error: e })),
    ]);
    window.__tailguard.data.alerts = alerts;
    const act = (alerts.alerts || []).slice().sort((a, b) =>
      (b.state !== 'pre_alert') - (a.state !== 'pre_alert') || (b.tier || 0) - (a.tier || 0));
    if (changed(cache, 'active', act)) drawActive(act);
    const eps = Array.isArray(alerts.episodes) ? alerts.episodes : null;
    if (changed(cache, 'episodes', eps)) drawEpisodes(eps);
    const silErr = sil.error ? (sil.error.status === 503 ? 'Silences need the event store (store.path).' : sil.error.describe()) : null;
    const silList = sil.silences || [];
    if (changed(cache, 'silences', [silList, silErr])) drawSilences(silList, silErr);
  }

  return { el, title: () => 'Alerts', refresh };
}
