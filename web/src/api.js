// The JSON API client. Every call sends `Authorization: Bearer <token>` when one is stored (reads
// need it only on a gateway reached by a name it does not know: allowed_hosts); mutating calls
// (POST, DELETE) need it, and on a 401 ask the user for the token (through the prompt installed
// with setTokenPrompt), keep it in localStorage and retry once. A gateway without a token
// configured refuses them with 403 api_token_not_set, whose message says how to set one.

const TOKEN_KEY = 'tailguard.apiToken';
let tokenPrompt = async () => null;

export class ApiError extends Error {
  constructor(status, code, message, path) {
    super(message);
    this.status = status;
    this.code = code;
    this.path = path;
  }
  // A line for the page: "GET /api/v1/x: 404 not_found: no such series".
  describe() {
    const what = this.status ? `${this.status}${this.code ? ` ${this.code}` : ''}` : this.code;
    return `${this.path}: ${what}: ${this.message}`;
  }
}

export function setTokenPrompt(fn) {
  tokenPrompt = fn;
}

export function storedToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function storeToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    // Private mode: the token lives for this page only.
  }
}

function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function request(method, path, { params, body, token, timeoutMs = 15000 } = {}) {
  const target = url(path, params);
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (token) headers.Authorization = `Bearer ${token}`;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let res;
  try {
    res = await fetch(target, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: abort.signal,
      cache: 'no-store',
    });
  } catch (e) {
    const why = e.name === 'AbortError' ? `no answer within ${timeoutMs / 1000} s` : 'tailguard is unreachable';
    throw new ApiError(0, 'network', why, `${method} ${path}`);
  } finally {
    clearTimeout(timer);
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      if (!res.ok) data = null;
      else throw new ApiError(res.status, 'bad_json', 'the answer is not JSON', `${method} ${path}`);
    }
  }
  if (!res.ok) {
    const err = data && data.error ? data.error : {};
    throw new ApiError(res.status, err.code || res.statusText, err.message || text.slice(0, 200) || 'request failed', `${method} ${path}`);
  }
  return data;
}

export function get(path, params, opts) {
  return request('GET', path, { token: storedToken(), ...opts, params });
}

// A mutating call. Asks for the API token on a 401 and retries once with it.
export async function send(method, path, body) {
  let token = storedToken();
  try {
    return await request(method, path, { body, token });
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401) throw e;
    const entered = await tokenPrompt(token
      ? 'The API token was refused. Enter the gateway\'s api_token:'
      : 'This action needs the API token (api_token of the gateway configuration):');
    if (!entered) {
      throw new ApiError(401, 'unauthorized', token
        ? 'refused: the stored API token does not match'
        : 'refused: this action needs the API token', `${method} ${path}`);
    }
    token = entered;
    const result = await request(method, path, { body, token });
    storeToken(token);
    return result;
  }
}
