/* docs.js: the interactive API docs at /docs: Swagger UI (vendor/swagger-ui-dist, compiled
 * in) rendering the server's own /openapi.json. The API token is the dashboard's: kept in
 * this tab's sessionStorage, sent as a bearer token with the document's request and with
 * every "Try it out" request; a server that wants one and has none gets a form asking for
 * it. No inline script or style (the page's Content-Security-Policy forbids them). The
 * state is on <body data-state>: loading, ready, token or error. */
(function () {
  'use strict';

  const TOKEN_KEY = 'zbso.apiToken';   /* the dashboard's key (app.js) */

  function token() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }

  function state(s) {
    document.body.dataset.state = s;
  }

  /* Swagger UI's hook on every request it sends ("Try it out"): adds the stored token
   * unless the Authorize dialog set one. */
  function withToken(req) {
    const t = token();
    if (t && !req.headers.Authorization)
      req.headers.Authorization = 'Bearer ' + t;
    return req;
  }

  function message(text) {
    const root = document.getElementById('swagger-ui');
    const p = document.createElement('p');
    p.className = 'zbso-message';
    p.textContent = text;
    root.replaceChildren(p);
    return root;
  }

  function askToken(again) {
    const root = message(again ? 'The server refused this token. Enter its API token ' +
                                 '(ZEUS_BSO_API_TOKEN):'
                               : 'This server needs its API token (ZEUS_BSO_API_TOKEN) ' +
                                 'for its API document. It is kept in this tab only.');
    const form = document.createElement('form');
    const input = document.createElement('input');
    input.type = 'password';
    input.id = 'token';
    input.autocomplete = 'off';
    input.required = true;
    const button = document.createElement('button');
    button.type = 'submit';
    button.textContent = 'Show the API';
    form.append(input, button);
    form.addEventListener('submit', function (ev) {
      ev.preventDefault();
      try { sessionStorage.setItem(TOKEN_KEY, input.value.trim()); } catch (e) { /* private */ }
      load();
    });
    root.append(form);
    state('token');
  }

  async function load() {
    state('loading');
    const t = token();
    const headers = {Accept: 'application/json'};
    if (t)
      headers.Authorization = 'Bearer ' + t;
    let doc;
    try {
      const r = await fetch('/openapi.json', {headers: headers, cache: 'no-cache'});
      if (r.status === 401) {
        askToken(t !== '');
        return;
      }
      if (!r.ok)
        throw new Error('GET /openapi.json answered ' + r.status);
      doc = await r.json();
    } catch (e) {
      message('Could not load the API document: ' + e.message);
      state('error');
      return;
    }
    window.ui = SwaggerUIBundle({
      spec: doc,
      dom_id: '#swagger-ui',
      deepLinking: true,
      requestInterceptor: withToken,
      onComplete: function () { state('ready'); },
    });
  }

  load();
}());
