// Modal forms built on <dialog>: the API token, acknowledging an alert, adding a silence.
// Each returns a promise of the values entered, or null when cancelled.
import { h } from './dom.js';

let counter = 0;

// fields: [{name, label, type, value, required, options:[{value,label}], hint, autocomplete}]
export function formDialog({ title, message, fields, submit = 'Save', id }) {
  return new Promise((resolve) => {
    const inputs = {};
    const rows = fields.map((f) => {
      const fid = `dlg-${++counter}-${f.name}`;
      let input;
      if (f.options) {
        input = h('select', { id: fid, name: f.name },
          f.options.map((o) => h('option', { value: o.value, selected: o.value === f.value }, o.label)));
      } else if (f.type === 'textarea') {
        input = h('textarea', { id: fid, name: f.name, rows: 2 });
        input.value = f.value || '';
      } else {
        input = h('input', {
          id: fid, name: f.name, type: f.type || 'text', required: !!f.required,
          autocomplete: f.autocomplete || 'off', spellcheck: 'false', placeholder: f.placeholder,
        });
        input.value = f.value || '';
      }
      inputs[f.name] = input;
      return h('div', { class: 'field' },
        h('label', { for: fid }, f.label),
        input,
        f.hint ? h('small', { class: 'hint' }, f.hint) : null);
    });
    const error = h('p', { class: 'dialog-error', role: 'alert', hidden: true });
    const cancel = h('button', { type: 'button', class: 'secondary', value: 'cancel' }, 'Cancel');
    const form = h('form', { method: 'dialog' },
      h('h2', null, title),
      message ? h('p', null, message) : null,
      rows,
      error,
      h('div', { class: 'dialog-buttons' }, cancel, h('button', { type: 'submit', class: 'primary' }, submit)));
    const dlg = h('dialog', { class: 'form-dialog', id: id || null, 'aria-label': title }, form);
    let result = null;
    cancel.addEventListener('click', () => dlg.close());
    form.addEventListener('submit', (e) => {
      const values = {};
      for (const [k, el] of Object.entries(inputs)) values[k] = el.value.trim();
      const missing = fields.find((f) => f.required && !values[f.name]);
      if (missing) {
        e.preventDefault();
        error.textContent = `${missing.label} is required.`;
        error.hidden = false;
        inputs[missing.name].focus();
        return;
      }
      result = values;
    });
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(result);
    });
    document.body.appendChild(dlg);
    dlg.showModal();
    const first = fields.find((f) => f.autofocus) || fields.find((f) => !inputs[f.name].value) || fields[0];
    if (first) inputs[first.name].focus();
  });
}

export async function askToken(message, { allowEmpty = false } = {}) {
  const v = await formDialog({
    id: 'token-dialog',
    title: 'API token',
    message,
    submit: 'Use token',
    fields: [{
      name: 'token', label: 'API token', type: 'password', required: !allowEmpty,
      autocomplete: 'current-password', hint: 'Kept in this browser (localStorage) and sent as Authorization: Bearer.',
    }],
  });
  return v === null ? null : v.token;
}
