// The console (docs/console.md, D65): signs in through the hosted page with ServiceAuthClient (the SDK's
// script-tag build defines the global) and does everything through the admin API, /admin/v1/…, as the
// person signed in. Pages are hash routes (#/users/<id>), so the server serves one document. Every text
// goes through t(): its German is in services/auth/console/i18n_de.go (a test holds them together).
;(() => {
  'use strict'
  const settings = JSON.parse(document.getElementById('console-settings').textContent)
  const catalog = settings.catalog || {}
  const lang = settings.lang || 'en'
  /** t translates s into the page's language, filling each %s with the next argument. */
  const t = (s, ...args) => {
    let out = catalog[s] || s
    for (const a of args) out = out.replace('%s', String(a))
    return out
  }
  const home = settings.issuer + '/console/'
  const api = settings.issuer + '/admin/v1'

  // The console's tokens live in the issuer's origin: opened on another host name of the same server
  // (127.0.0.1 for the dev server's localhost), it moves to the issuer's.
  if (location.origin !== new URL(settings.issuer).origin) {
    location.replace(home + location.hash)
    return
  }

  const $ = (id) => document.getElementById(id)
  const main = $('main')
  const auth = new ServiceAuthClient({
    baseUrl: settings.issuer,
    clientId: settings.clientId,
    redirectUri: home + 'callback',
    postLogoutRedirectUri: home,
    scope: settings.scope,
  })

  // ---- small helpers --------------------------------------------------------------------------------

  /** el builds an element: attrs are properties (class → className) or data-/aria- attributes. */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag)
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue
      if (k === 'class') e.className = v
      else if (k.startsWith('data-') || k.startsWith('aria-') || k === 'for' || k === 'role') e.setAttribute(k, v)
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v)
      else e[k] = v
    }
    for (const kid of kids.flat()) {
      if (kid === undefined || kid === null || kid === false) continue
      e.append(kid instanceof Node ? kid : document.createTextNode(String(kid)))
    }
    return e
  }

  const when = (iso) => (iso ? new Date(iso).toLocaleString(lang) : '—')
  const yes = (b) => (b ? t('yes') : t('no'))

  /** table renders rows under labelled columns; each cell carries its column's name for narrow screens. */
  function table(caption, columns, rows, empty) {
    if (!rows.length) return el('p', { class: 'muted' }, empty)
    return el(
      'table',
      {},
      el('caption', { class: 'visually-hidden' }, caption),
      el('thead', {}, el('tr', {}, columns.map((c) => el('th', { scope: 'col' }, c.label)))),
      el('tbody', {}, rows.map((r) => el('tr', {}, columns.map((c) => el('td', { 'data-label': c.label }, c.cell(r)))))),
    )
  }

  function announce(msg) {
    $('status').textContent = ''
    $('status').textContent = msg
  }

  /** show replaces the page's content; a new page moves the focus to its heading for screen readers. */
  function show(view, title, ...kids) {
    main.dataset.view = view
    main.replaceChildren(el('h1', { tabIndex: -1, id: 'title' }, title), ...kids.flat().filter((k) => k !== null && k !== undefined && k !== false))
    document.title = title + ' – ' + t('Console')
    for (const a of document.querySelectorAll('[data-nav]')) {
      if (a.dataset.nav === view.split('-')[0]) a.setAttribute('aria-current', 'page')
      else a.removeAttribute('aria-current')
    }
  }

  function focusTitle() {
    const h = $('title')
    if (h) h.focus()
  }

  // ---- the admin API --------------------------------------------------------------------------------

  class APIError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || 'HTTP ' + status)
      this.status = status
      this.problem = problem || {}
    }
  }

  /** call sends one request to the admin API with the person's access token (refreshed by the SDK). */
  async function call(method, path, body) {
    const token = await auth.getAccessToken()
    const headers = { Authorization: 'Bearer ' + token }
    if (body !== undefined) headers['Content-Type'] = 'application/json'
    const res = await fetch(api + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    if (res.status === 204) return null
    const data = await res.json().catch(() => null)
    if (!res.ok) throw new APIError(res.status, data)
    return data
  }

  const query = (params) => {
    const q = new URLSearchParams()
    for (const [k, v] of Object.entries(params)) if (v) q.set(k, v)
    const s = q.toString()
    return s ? '?' + s : ''
  }

  /** failed explains an error of the API or of the sign-in, in words for the person at the console. */
  function failed(e) {
    if (e instanceof APIError) {
      if (e.status === 401) return t('Your sign-in has ended. Sign in again.')
      if (e.status === 403) return t('Your account may not do this (%s).', e.message)
      if (e.status === 404) return t('Not found: it may have been deleted meanwhile.')
      if (e.status === 409) return t('Not done: %s', e.message)
      if (e.status === 503) return t('The store did not answer. Try again in a moment.')
      return t('The request was refused: %s', e.message)
    }
    if (e && e.code) return t('Your sign-in has ended. Sign in again.')
    return t('The server could not be reached. Try again in a moment.')
  }

  function alertBox(e) {
    return el('p', { class: 'alert', role: 'alert' }, failed(e))
  }

  // ---- signed out, refused --------------------------------------------------------------------------

  function signIn() {
    return auth.signIn({ returnTo: location.hash || '#/' })
  }

  function showSignedOut(err) {
    $('nav').hidden = true
    $('who').hidden = true
    show(
      'signed-out',
      t('Console'),
      err ? el('p', { class: 'alert', role: 'alert' }, failed(err)) : null,
      el('p', {}, t('Manage the accounts of your product, read the audit trail and see the OAuth clients.')),
      el('p', {}, t('Sign in with an account in the group %s.', settings.adminGroup)),
      el('button', { type: 'button', id: 'sign-in', onclick: () => signIn().catch((e) => showSignedOut(e)) }, t('Sign in')),
    )
  }

  function showNotAdmin(email) {
    $('nav').hidden = true
    show(
      'refused',
      t('No access to the console'),
      el('p', { class: 'alert', role: 'alert' }, t('You are signed in as %s, but this account is not in the group %s.', email, settings.adminGroup)),
      el('p', {}, t('Ask an administrator to add you to the group, then sign in again.')),
      el('p', {}, el('code', {}, 'formsservice users groups add --email ' + email + ' ' + settings.adminGroup)),
    )
  }

  // ---- pages ----------------------------------------------------------------------------------------

  /** countAll pages through a listing to count it, up to max pages of 200 (then "at least"), counting
   * each item by by(item) too. */
  async function countAll(path, key, params, max, by) {
    const n = { all: 0 }
    let cursor = ''
    for (let i = 0; i < max; i++) {
      const page = await call('GET', path + query({ ...params, limit: '200', cursor }))
      for (const item of page[key]) {
        n.all++
        if (by) n[by(item)] = (n[by(item)] || 0) + 1
      }
      if (!page.next_cursor) return { n, more: '' }
      cursor = page.next_cursor
    }
    return { n, more: '+' }
  }

  async function homePage() {
    show('home', t('Overview'), el('p', { class: 'muted' }, t('Loading…')))
    const day = { since: '24h' }
    const [users, events, signins, clients, latest, forms] = await Promise.all([
      countAll('/users', 'users', {}, 5),
      countAll('/audit', 'events', day, 5),
      countAll('/audit', 'events', { ...day, kind: 'signin' }, 5, (e) => e.outcome),
      call('GET', '/clients'),
      call('GET', '/audit' + query({ limit: '8' })),
      call('GET', '/forms' + query({ days: String(chartDays) })).catch(() => ({ forms: null })),
    ])
    const card = (id, label, value, href) =>
      el('li', {}, el('span', { class: 'count', id: 'count-' + id }, value), href ? el('a', { href }, label) : label)
    show(
      'home',
      t('Overview'),
      el(
        'ul',
        { class: 'cards', 'aria-label': t('Counts') },
        card('users', t('accounts'), users.n.all + users.more, '#/users'),
        card('signins', t('sign-ins in the last 24 hours'), (signins.n.success || 0) + signins.more, '#/audit?kind=signin&since=24h'),
        card('failures', t('failed sign-ins in the last 24 hours'), (signins.n.failure || 0) + signins.more, '#/audit?kind=signin&since=24h'),
        card('events', t('events in the last 24 hours'), events.n.all + events.more, '#/audit?since=24h'),
        card('clients', t('OAuth clients'), String(clients.clients.length), '#/clients'),
      ),
      formsSummary(forms.forms),
      el('h2', {}, t('Latest events')),
      eventsTable(latest.events),
    )
  }

  // ---- forms (the admin API's /forms…, D63) -------------------------------------------------------

  const formPath = (id) => '/forms/' + encodeURIComponent(id)
  const formHref = (id) => '#/forms/' + encodeURIComponent(id)

  /** value shows one field's value: a text, a number, yes/no, or a list of choices. */
  const value = (v) => {
    if (v === null || v === undefined || v === '') return '—'
    if (typeof v === 'boolean') return yes(v)
    if (Array.isArray(v)) return v.join(', ') || '—'
    return String(v)
  }

  /** preview is a submission's first fields in a line, for the list. */
  const preview = (s) => {
    const vals = Object.values(s.fields || {}).filter((v) => v !== null && v !== '' && v !== undefined).slice(0, 3)
    const line = vals.map(value).join(' · ')
    return line.length > 120 ? line.slice(0, 119) + '…' : line || '—'
  }

  const stateNames = () => ({
    stored: t('stored'), queued: t('queued'), delivering: t('delivering'), delivered: t('delivered'),
    failed: t('failed'), spam: t('spam'),
    subscribed: t('subscribed'), pending: t('pending'), confirmed: t('confirmed'), unsubscribed: t('unsubscribed'),
  })
  const stateBadge = (s) => el('span', { class: s === 'failed' || s === 'spam' ? 'badge bad' : 'badge' }, stateNames()[s] || s)

  /** formsTable lists the forms with their counts (the overview and the forms page). */
  function formsTable(forms) {
    const link = (f) => (f.kind === 'waitlist' ? '#/forms/waitlist' : formHref(f.id))
    return table(t('Forms'), [
      { label: t('Form'), cell: (f) => el('a', { href: link(f), 'data-form': f.id }, f.title || f.id) },
      { label: t('Submissions'), cell: (f) => String(f.kind === 'waitlist' ? f.counts.entries || 0 : f.counts.submissions || 0) },
      { label: t('Spam'), cell: (f) => (f.kind === 'waitlist' ? '—' : String(f.counts.spam || 0)) },
      { label: t('Pending opt-ins'), cell: (f) => (f.kind === 'waitlist' ? String(f.counts.pending || 0) : '—') },
      { label: t('Dead letters'), cell: (f) => (f.kind === 'waitlist' ? '—'
        : f.counts.dead_letters ? el('a', { href: formHref(f.id) + '/dead-letters' }, String(f.counts.dead_letters)) : '0') },
      { label: t('Served'), cell: (f) => (f.declared ? yes(true) : t('no longer declared')) },
    ], forms, t('No form has stored anything yet.'))
  }

  function formsSummary(forms) {
    if (!forms) return null // no forms:read, or the forms' store did not answer: the overview stays
    return el('section', { id: 'forms-summary', 'aria-labelledby': 'forms-summary-title' },
      el('h2', { id: 'forms-summary-title' }, t('Forms')), formsTable(forms), dailyCharts(forms))
  }

  // ---- the overview's chart: what each form kept per day (GET /forms?days=, D80) -------------------

  const chartDays = 14
  const svgNS = 'http://www.w3.org/2000/svg'
  /** svg builds an SVG element with attributes. */
  function svg(tag, attrs, ...kids) {
    const e = document.createElementNS(svgNS, tag)
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v))
    for (const kid of kids) e.append(kid)
    return e
  }
  const dayName = (date) => new Date(date + 'T00:00:00Z').toLocaleDateString(lang, { timeZone: 'UTC', month: 'short', day: 'numeric' })

  /**
   * dailyCharts draws, for each form, a bar a day of what it kept (the waitlist: new sign-ups), and the
   * same numbers as a table for screen readers and for reading exact values. The bars are a picture
   * (role img, one label that says the total and the busiest day); each bar's title shows its day on
   * hover. Bars are the accent colour on the card, 3:1 and more in both schemes.
   */
  function dailyCharts(forms) {
    const charted = forms.filter((f) => Array.isArray(f.daily) && f.daily.length)
    if (!charted.length) return null
    const figure = (f) => {
      const days = f.daily
      const total = days.reduce((n, d) => n + d.submissions, 0)
      const top = days.reduce((a, d) => (d.submissions > a.submissions ? d : a), days[0])
      const peak = Math.max(1, top.submissions)
      const w = 10
      const label = total
        ? t('%s: %s in the last %s days, most on %s (%s).', f.title || f.id, total, days.length, dayName(top.date), top.submissions)
        : t('%s: nothing in the last %s days.', f.title || f.id, days.length)
      const bars = days.map((d, i) => {
        const h = d.submissions ? Math.max(2, Math.round((d.submissions / peak) * 38)) : 0
        return svg('rect', { x: i * w + 1, y: 40 - h, width: w - 2, height: h, class: 'bar' },
          svg('title', {}, dayName(d.date) + ': ' + d.submissions))
      })
      return el('figure', { class: 'chart', 'data-chart': f.id },
        el('figcaption', {}, el('strong', {}, f.title || f.id), ' ', el('span', { class: 'muted' }, t('%s in %s days', total, days.length))),
        svg('svg', { viewBox: '0 0 ' + days.length * w + ' 41', preserveAspectRatio: 'none', role: 'img', 'aria-label': label },
          svg('line', { x1: 0, y1: 40.5, x2: days.length * w, y2: 40.5, class: 'axis' }), ...bars),
        el('div', { class: 'chart-scale muted', 'aria-hidden': 'true' }, el('span', {}, dayName(days[0].date)), el('span', {}, dayName(days[days.length - 1].date))))
    }
    const columns = [{ label: t('Day'), cell: (d) => dayName(d.date) }].concat(
      charted.map((f) => ({ label: f.title || f.id, cell: (d) => String(d.submissions) })))
    const rows = charted[0].daily.map((d, i) => ({ date: d.date, i }))
    return el('section', { id: 'forms-daily', 'aria-labelledby': 'forms-daily-title' },
      el('h3', { id: 'forms-daily-title' }, t('Submissions per day, last %s days (UTC)', chartDays)),
      el('div', { class: 'charts' }, charted.map(figure)),
      el('details', {}, el('summary', {}, t('The days as a table')),
        el('div', {}, table(t('Submissions per day'), columns.map((c, j) => (j === 0 ? c
          : { label: c.label, cell: (r) => String(charted[j - 1].daily[r.i].submissions) })), rows, ''))))
  }

  async function formsPage() {
    show('forms', t('Forms'), el('p', { class: 'muted' }, t('Loading…')))
    const list = await call('GET', '/forms')
    show('forms', t('Forms'),
      el('div', { id: 'forms' }, formsTable(list.forms)),
      list.published_at ? null : el('p', { class: 'muted' }, t('The forms service has not published its declared forms yet.')),
      el('h2', {}, t('Erase a person')),
      erasureForm())
  }

  /** erasureForm erases everything stored for an address, as formsservice forget does (a second click). */
  function erasureForm() {
    const email = el('input', { type: 'email', id: 'erase-email', name: 'email', required: true, autocomplete: 'off' })
    const result = el('div', { id: 'erase-result' })
    let armed = ''
    const go = el('button', { type: 'submit', class: 'danger' }, t('Erase'))
    return el('div', {},
      el('p', { class: 'muted' }, t('Deletes every submission, waitlist entry and dead letter of an address. It cannot be undone.')),
      result,
      el('form', { onsubmit: async (ev) => {
        ev.preventDefault()
        const addr = email.value.trim()
        if (armed !== addr) {
          armed = addr
          go.textContent = t('Erase %s for good', addr)
          return
        }
        try {
          const r = await call('POST', '/erasures', { email: addr })
          const n = r.contact_messages.length + r.waitlist_entries + r.dead_letters + r.spam +
            Object.values(r.form_submissions || {}).reduce((a, l) => a + l.length, 0)
          result.replaceChildren(el('p', { class: 'done' }, t('%s records of %s erased.', n, r.email)))
        } catch (e) {
          result.replaceChildren(alertBox(e))
        }
        armed = ''
        go.textContent = t('Erase')
      } },
      el('div', { class: 'field' }, el('label', { for: 'erase-email' }, t('E-mail address')), email),
      go))
  }

  /** download fetches an export with the person's token and hands it to the browser as a file: the
   * export is held in memory once (fine for the sizes a console exports; the CLI streams big ones). */
  async function download(path, name, box) {
    box.replaceChildren()
    try {
      const token = await auth.getAccessToken()
      const res = await fetch(api + path, { headers: { Authorization: 'Bearer ' + token } })
      if (!res.ok) throw new APIError(res.status, await res.json().catch(() => null))
      const text = await res.text()
      const rows = name.endsWith('.json') ? JSON.parse(text).length : Math.max(text.split('\n').filter(Boolean).length - 1, 0)
      const url = URL.createObjectURL(new Blob([text], { type: res.headers.get('Content-Type') || 'application/octet-stream' }))
      const a = el('a', { href: url, download: name, hidden: true })
      document.body.append(a)
      a.click()
      a.remove()
      setTimeout(() => URL.revokeObjectURL(url), 60000)
      box.replaceChildren(el('p', { class: 'done', 'data-rows': rows, 'data-file': name }, t('%s rows exported to %s.', rows, name)))
    } catch (e) {
      box.replaceChildren(alertBox(e))
    }
  }

  function exportButtons(path, params, base, box) {
    const btn = (label, format, ext) =>
      el('button', { type: 'button', class: 'secondary', id: 'export-' + format, onclick: () => download(path + query({ ...params, format }), base + '.' + ext, box) }, label)
    return el('div', { class: 'actions' }, btn(t('Export CSV'), 'csv', 'csv'), btn(t('Export JSON'), 'json', 'json'))
  }

  // Polling: the first page of a list is asked for again every few seconds while the page is visible,
  // and what is new is put on top. route() stops it when the person leaves the page.
  let poller = 0
  function stopPolling() {
    clearInterval(poller)
    poller = 0
  }
  function startPolling(every, tick) {
    stopPolling()
    poller = setInterval(() => {
      if (document.visibilityState === 'visible') tick().catch(() => {}) // the next tick tries again
    }, every)
  }

  async function submissionsPage(form, params) {
    const folder = params.get('folder') === 'spam' ? 'spam' : 'inbox'
    const filter = { folder: folder === 'spam' ? 'spam' : '', q: params.get('q') || '', since: params.get('since') || '', until: params.get('until') || '' }
    const f = await call('GET', formPath(form))
    const title = f.title || f.id
    const inputs = {}
    const fields = [
      ['q', t('Search'), t('A text in any field, or an ID')],
      ['since', t('Since'), t('A date, a time (RFC 3339) or a duration ago: 24h, 7d')],
      ['until', t('Until')],
    ]
    const filterForm = el('form', { role: 'search', onsubmit: (ev) => {
      ev.preventDefault()
      const q = { folder: filter.folder }
      for (const [k] of fields) q[k] = inputs[k].value.trim()
      location.hash = formHref(form) + query(q)
    } },
    fields.map(([k, label, hint]) => {
      inputs[k] = el('input', { id: 'f-' + k, name: k, type: k === 'q' ? 'search' : 'text', value: filter[k], autocomplete: 'off', 'aria-describedby': hint ? 'h-' + k : undefined })
      return el('div', { class: 'field' }, el('label', { for: 'f-' + k }, label), inputs[k], hint ? el('p', { class: 'hint', id: 'h-' + k }, hint) : null)
    }),
    el('button', { type: 'submit' }, t('Filter')))
    const folderLink = (name, label, n) => el('a', {
      href: formHref(form) + query({ ...filter, folder: name === 'spam' ? 'spam' : '' }), id: 'folder-' + name,
      'aria-current': folder === name ? 'page' : undefined,
    }, label + ' (' + n + ')')
    const folders = el('nav', { class: 'folders', 'aria-label': t('Folders') }, el('ul', {},
      el('li', {}, folderLink('inbox', t('Inbox'), f.counts.submissions || 0)),
      el('li', {}, folderLink('spam', t('Spam'), f.counts.spam || 0)),
      el('li', {}, el('a', { href: formHref(form) + '/dead-letters', id: 'folder-dead' }, t('Dead letters') + ' (' + (f.counts.dead_letters || 0) + ')'))))
    const exported = el('div', { id: 'export-result' })
    const list = el('div', { id: 'submissions', 'data-folder': folder, 'data-q': filter.q })
    const more = el('button', { type: 'button', class: 'secondary', hidden: true }, t('Next page'))
    const rows = []
    const seen = new Set()
    let cursor = ''
    const columns = [
      { label: t('Received'), cell: (s) => el('a', { href: formHref(form) + '/submissions/' + encodeURIComponent(s.id), 'data-id': s.id }, when(s.received_at)) },
      { label: t('Fields'), cell: preview },
      { label: t('State'), cell: (s) => stateBadge(s.state) },
    ]
    const empty = filter.q || filter.since || filter.until ? t('No submission matches.') : folder === 'spam' ? t('The spam folder is empty.') : t('No submissions yet.')
    const render = () => list.replaceChildren(table(t('Submissions'), columns, rows, empty))
    const load = async () => {
      const page = await call('GET', formPath(form) + '/submissions' + query({ ...filter, cursor, limit: '50' }))
      for (const s of page.submissions) if (!seen.has(s.id)) { seen.add(s.id); rows.push(s) }
      cursor = page.next_cursor || ''
      more.hidden = !cursor
      render()
    }
    more.onclick = () => load().catch((e) => list.append(alertBox(e)))
    try {
      await load()
    } catch (e) {
      show('forms-submissions', title, folders, filterForm, alertBox(e))
      return
    }
    show('forms-submissions', title, folders, filterForm,
      exportButtons(formPath(form) + '/submissions/export', filter, form + (folder === 'spam' ? '-spam' : ''), exported), exported,
      list, more)
    // New submissions: the first page again, what was not seen goes on top.
    startPolling(3000, async () => {
      const page = await call('GET', formPath(form) + '/submissions' + query({ ...filter, limit: '50' }))
      const fresh = page.submissions.filter((s) => !seen.has(s.id))
      if (!fresh.length) return
      for (const s of fresh) seen.add(s.id)
      rows.unshift(...fresh)
      render()
      announce(t('%s new submissions.', fresh.length))
    })
  }

  /** size is a byte count in the unit that reads best. */
  const size = (n) => (n < 1024 ? t('%s bytes', n) : n < 1048576 ? t('%s KB', (n / 1024).toFixed(1)) : t('%s MB', (n / 1048576).toFixed(1)))

  /** fileButton downloads a submission's file: the API grants one download at a time (D83), so each
   * click asks for a fresh link on the forms' host and follows it; the browser saves the attachment. */
  function fileButton(path, f, box) {
    const fileID = f.key.split('/').pop()
    return el('button', { type: 'button', class: 'link', 'data-file': fileID, 'aria-label': t('Download %s', f.name), onclick: async (ev) => {
      ev.target.disabled = true
      try {
        const link = await call('POST', path + '/files/' + encodeURIComponent(fileID) + '/link')
        const a = el('a', { href: link.url, hidden: true, rel: 'noreferrer' })
        document.body.append(a)
        a.click()
        a.remove()
        box.replaceChildren(el('p', { class: 'done', 'data-file': fileID }, t('Downloading %s.', f.name)))
      } catch (e) {
        box.replaceChildren(alertBox(e))
      } finally {
        ev.target.disabled = false
      }
    } }, f.name)
  }

  async function submissionPage(form, id, done) {
    const path = formPath(form) + '/submissions/' + encodeURIComponent(id)
    show('forms-submission', t('Submission'), el('p', { class: 'muted' }, t('Loading…')))
    const [f, s] = await Promise.all([call('GET', formPath(form)), call('GET', path)])
    const labels = {}
    for (const fd of f.fields || []) labels[fd.name] = fd.label || fd.name
    const back = formHref(form) + (s.folder === 'spam' ? '?folder=spam' : '')
    const result = el('div', { id: 'action-result' }, done ? el('p', { class: 'done' }, done) : null)
    const act = (label, cls, btnID, run) => el('button', { type: 'button', class: cls, id: btnID, onclick: async (ev) => {
      ev.target.disabled = true
      try {
        await run()
      } catch (e) {
        ev.target.disabled = false
        result.replaceChildren(alertBox(e))
      }
    } }, label)
    const pairs = (vals, named) => Object.entries(vals || {}).flatMap(([k, v]) => [el('dt', {}, named ? labels[k] || k : k), el('dd', {}, value(v))])
    show('forms-submission', t('Submission of %s', when(s.received_at)),
      el('p', {}, el('a', { href: back }, t('Back to %s', f.title || f.id))),
      result,
      el('dl', { id: 'fields' }, pairs(s.fields, true)),
      s.additional && Object.keys(s.additional).length ? [el('h2', {}, t('Other fields')), el('dl', {}, pairs(s.additional, false))] : null,
      s.files && s.files.length ? [el('h2', {}, t('Files')), el('div', { id: 'files' }, table(t('Files'), [
        { label: t('Field'), cell: (f) => labels[f.field] || f.field },
        { label: t('File'), cell: (f) => fileButton(path, f, result) },
        { label: t('Size'), cell: (f) => size(f.size) },
        { label: t('Type'), cell: (f) => f.type },
      ], s.files, ''))] : null,
      el('h2', {}, t('Details')),
      el('dl', {},
        el('dt', {}, t('Folder')), el('dd', {}, s.folder === 'spam' ? t('Spam') : t('Inbox')),
        el('dt', {}, t('State')), el('dd', {}, stateBadge(s.state)),
        el('dt', {}, t('Received')), el('dd', {}, when(s.received_at)),
        el('dt', {}, t('Sent from')), el('dd', {}, s.origin || '—'),
        s.spam ? [el('dt', {}, t('Spam score')), el('dd', {}, s.spam.score + ((s.spam.reasons || []).length ? ' (' + s.spam.reasons.join(', ') + ')' : ''))] : null,
        el('dt', {}, t('Submission ID')), el('dd', {}, el('code', {}, s.id)),
      ),
      el('h2', {}, t('Actions')),
      el('div', { class: 'actions' },
        s.folder === 'spam'
          ? act(t('Not spam: deliver'), '', 'release', async () => {
            await call('POST', path + '/release')
            await submissionPage(form, id, t('Released: the submission is in the inbox and handed to delivery.'))
          })
          : act(t('Mark as spam'), 'secondary', 'mark-spam', async () => {
            await call('POST', path + '/spam')
            await submissionPage(form, id, t('Moved to the spam folder.'))
          }),
      ),
      el('details', {},
        el('summary', {}, t('Delete this submission')),
        el('div', {},
          el('p', {}, t('This erases the submission, its delivery state and its dead letters. It cannot be undone.')),
          act(t('Delete for good'), 'danger', 'delete', async () => {
            await call('DELETE', path)
            location.hash = back
            announce(t('The submission was deleted.'))
          }),
        ),
      ),
    )
  }

  async function deadLettersPage(form) {
    const path = formPath(form) + '/dead-letters'
    show('forms-dead', t('Dead letters'), el('p', { class: 'muted' }, t('Loading…')))
    const f = await call('GET', formPath(form))
    const result = el('div', { id: 'action-result' })
    const list = el('div', { id: 'dead-letters' })
    const more = el('button', { type: 'button', class: 'secondary', hidden: true }, t('Next page'))
    let rows = []
    let cursor = ''
    const act = (label, cls, d, run) => el('button', { type: 'button', class: cls, 'data-id': d.id, onclick: async (ev) => {
      ev.target.disabled = true
      try {
        result.replaceChildren(el('p', { class: 'done' }, await run()))
        rows = rows.filter((r) => r.id !== d.id)
        render()
      } catch (e) {
        ev.target.disabled = false
        result.replaceChildren(alertBox(e))
      }
    } }, label)
    const render = () => list.replaceChildren(table(t('Dead letters'), [
      { label: t('Given up'), cell: (d) => when(d.given_up_at) },
      { label: t('Fields'), cell: preview },
      { label: t('Channel'), cell: (d) => d.channel },
      { label: t('Attempts'), cell: (d) => String(d.attempts) },
      { label: t('Last error'), cell: (d) => el('span', { class: 'id' }, d.last_error) },
      { label: t('Actions'), cell: (d) => el('div', { class: 'actions' },
        act(t('Retry'), '', d, async () => { await call('POST', path + '/' + encodeURIComponent(d.id) + '/retry'); return t('Handed back to delivery.') }),
        act(t('Discard'), 'secondary', d, async () => { await call('DELETE', path + '/' + encodeURIComponent(d.id)); return t('Discarded; the submission stays stored.') })) },
    ], rows, t('No dead letters: every delivery went through.')))
    const load = async () => {
      const page = await call('GET', path + query({ cursor, limit: '50' }))
      rows.push(...page.dead_letters)
      cursor = page.next_cursor || ''
      more.hidden = !cursor
      render()
    }
    more.onclick = () => load().catch((e) => list.append(alertBox(e)))
    await load()
    show('forms-dead', t('Dead letters of %s', f.title || f.id),
      el('p', {}, el('a', { href: formHref(form) }, t('Back to %s', f.title || f.id))),
      el('p', { class: 'muted' }, t('Submissions whose delivery failed after every retry. Retry hands one back to delivery under the same ID.')),
      result, list, more)
  }

  async function waitlistPage(params) {
    const state = params.get('state') || ''
    const select = el('select', { id: 'f-state', name: 'state' },
      [['', t('all')], ['subscribed', t('subscribed')], ['pending', t('pending')], ['confirmed', t('confirmed')], ['unsubscribed', t('unsubscribed')]]
        .map(([v, label]) => el('option', { value: v, selected: v === state }, label)))
    const filterForm = el('form', { onsubmit: (ev) => { ev.preventDefault(); location.hash = '#/forms/waitlist' + query({ state: select.value }) } },
      el('div', { class: 'field' }, el('label', { for: 'f-state' }, t('Opt-in state')), select),
      el('button', { type: 'submit' }, t('Filter')))
    show('forms-waitlist', t('Waitlist'), filterForm, el('p', { class: 'muted' }, t('Loading…')))
    const list = el('div', { id: 'entries', 'data-state': state })
    const more = el('button', { type: 'button', class: 'secondary', hidden: true }, t('Next page'))
    const rows = []
    let cursor = ''
    const load = async () => {
      const page = await call('GET', '/waitlist/entries' + query({ state, cursor, limit: '50' }))
      rows.push(...page.entries)
      cursor = page.next_cursor || ''
      more.hidden = !cursor
      list.replaceChildren(table(t('Waitlist'), [
        { label: t('E-mail address'), cell: (w) => w.email },
        { label: t('Name'), cell: (w) => w.name || '—' },
        { label: t('Opt-in state'), cell: (w) => stateBadge(w.state) },
        { label: t('Signed up'), cell: (w) => when(w.created_at) },
        { label: t('Confirmed'), cell: (w) => when(w.confirmed_at) },
        { label: t('Consent'), cell: (w) => yes(w.consent) + (w.consent_version ? ' (' + w.consent_version + ')' : '') },
      ], rows, state ? t('No entry is %s.', stateNames()[state] || state) : t('Nobody is on the waitlist yet.')))
    }
    more.onclick = () => load().catch((e) => list.append(alertBox(e)))
    await load()
    const exported = el('div', { id: 'export-result' })
    show('forms-waitlist', t('Waitlist'), filterForm, exportButtons('/waitlist/entries/export', {}, 'waitlist', exported), exported, list, more)
  }

  function stateBadges(u) {
    return [
      u.disabled ? el('span', { class: 'badge bad' }, t('disabled')) : el('span', { class: 'badge' }, t('active')),
      u.email_verified ? null : el('span', { class: 'badge' }, t('unverified')),
    ]
  }

  async function usersPage(params) {
    const q = params.get('q') || ''
    const input = el('input', { type: 'search', id: 'q', name: 'q', value: q, autocomplete: 'off' })
    const form = el(
      'form',
      { role: 'search', onsubmit: (ev) => { ev.preventDefault(); location.hash = '#/users' + query({ q: input.value.trim() }) } },
      el('div', { class: 'field' }, el('label', { for: 'q' }, t('E-mail address contains')), input),
      el('button', { type: 'submit' }, t('Search')),
    )
    show('users', t('Users'), form, el('p', { class: 'muted' }, t('Loading…')))
    const list = el('div', { id: 'users', 'data-q': q })
    const more = el('button', { type: 'button', class: 'secondary', hidden: true }, t('More'))
    const rows = []
    let cursor = ''
    const load = async () => {
      const page = await call('GET', '/users' + query({ q, cursor, limit: '50' }))
      rows.push(...page.users)
      cursor = page.next_cursor || ''
      more.hidden = !cursor
      list.replaceChildren(
        table(t('Users'), [
          { label: t('E-mail address'), cell: (u) => el('a', { href: '#/users/' + encodeURIComponent(u.id) }, u.email) },
          { label: t('Name'), cell: (u) => u.name || '—' },
          { label: t('State'), cell: stateBadges },
          { label: t('Groups'), cell: (u) => u.groups.join(', ') || '—' },
          { label: t('Created'), cell: (u) => when(u.created_at) },
        ], rows, q ? t('No account has an address containing %s.', q) : t('No accounts yet.')),
      )
    }
    more.onclick = () => load().catch((e) => list.append(alertBox(e)))
    await load()
    show('users', t('Users'), form, createForm(), list, more)
  }

  /** createForm makes an account (verified: the admin vouches for the address) without a password: its
   * owner chooses one with "Forgot password?", and no mail is sent (D59 4). */
  function createForm() {
    const email = el('input', { type: 'email', id: 'new-email', name: 'email', required: true, autocomplete: 'off' })
    const name = el('input', { id: 'new-name', name: 'name', autocomplete: 'off' })
    const result = el('div', { id: 'create-result' })
    return el('details', { id: 'create' },
      el('summary', {}, t('Create an account')),
      el('div', {},
        result,
        el('form', { onsubmit: async (ev) => {
          ev.preventDefault()
          try {
            const u = await call('POST', '/users', { email: email.value.trim(), name: name.value.trim() })
            history.pushState(null, '', '#/users/' + encodeURIComponent(u.id))
            await userPage(u.id, t('Created. No mail was sent: ask the person to choose a password with “Forgot password?” on the sign-in page.'))
            focusTitle()
          } catch (e) {
            result.replaceChildren(alertBox(e))
          }
        } },
          el('div', { class: 'field' }, el('label', { for: 'new-email' }, t('E-mail address')), email),
          el('div', { class: 'field' }, el('label', { for: 'new-name' }, t('Name (optional)')), name),
          el('button', { type: 'submit' }, t('Create account')),
        ),
      ),
    )
  }

  /** action runs one change to an account, then shows the page again with what happened. */
  function action(label, cls, run, id, attrs) {
    return el('button', { ...attrs, type: 'button', class: cls, id, onclick: async (ev) => {
      ev.target.disabled = true
      try {
        const msg = await run()
        if (msg) await userPage(currentUserID, msg) // (none: the action went to another page)
      } catch (e) {
        ev.target.disabled = false
        const box = $('action-result')
        box.replaceChildren(alertBox(e))
      }
    } }, label)
  }

  let currentUserID = ''

  async function userPage(id, done) {
    currentUserID = id
    const path = '/users/' + encodeURIComponent(id)
    show('users-user', t('Account'), el('p', { class: 'muted' }, t('Loading…')))
    const [u, sessions, grants, factors, events] = await Promise.all([
      call('GET', path),
      call('GET', path + '/sessions'),
      call('GET', path + '/grants'),
      call('GET', path + '/factors'),
      call('GET', '/audit' + query({ user: id, limit: '20' })),
    ])
    const sf = factors.second_factor
    const ended = (r) => t('%s sessions ended, %s grants revoked.', r.sessions_ended, r.grants_revoked)
    const groups = el('input', { id: 'groups', name: 'groups', value: u.groups.join(', '), autocomplete: 'off', 'aria-describedby': 'groups-hint' })
    const groupsForm = el(
      'form',
      { onsubmit: async (ev) => {
        ev.preventDefault()
        const list = groups.value.split(',').map((s) => s.trim()).filter(Boolean)
        try {
          await call('PUT', path + '/groups', { groups: list })
          await userPage(id, t('Groups saved.'))
        } catch (e) {
          $('action-result').replaceChildren(alertBox(e))
        }
      } },
      el('div', { class: 'field' }, el('label', { for: 'groups' }, t('Groups')), groups,
        el('p', { class: 'hint', id: 'groups-hint' }, t('Separated by commas. %s lets an account use the console.', settings.adminGroup))),
      el('button', { type: 'submit', class: 'secondary' }, t('Save groups')),
    )
    show(
      'users-user',
      u.email,
      el('div', { id: 'action-result' }, done ? el('p', { class: 'done' }, done) : null),
      el('dl', {},
        el('dt', {}, t('Name')), el('dd', {}, u.name || '—'),
        el('dt', {}, t('State')), el('dd', {}, stateBadges(u)),
        el('dt', {}, t('Created')), el('dd', {}, when(u.created_at)),
        el('dt', {}, t('Signed up themselves')), el('dd', {}, yes(u.self_signup)),
        el('dt', {}, t('Groups')), el('dd', {}, u.groups.join(', ') || '—'),
        el('dt', {}, t('User ID')), el('dd', {}, el('code', {}, u.id)),
      ),
      el('h2', {}, t('Actions')),
      el('div', { class: 'actions' },
        u.disabled
          ? action(t('Enable'), '', async () => { await call('POST', path + '/enable'); return t('Enabled: the account can sign in again.') }, 'enable')
          : action(t('Disable'), 'danger', async () => t('Disabled.') + ' ' + ended(await call('POST', path + '/disable')), 'disable'),
        action(t('Sign out everywhere'), 'secondary', async () => ended(await call('POST', path + '/sign-out')), 'sign-out-everywhere'),
        u.email_verified || u.disabled ? null
          : action(t('Send verification link'), 'secondary', async () => { await call('POST', path + '/verification', { lang }); return t('The verification link was sent.') }, 'send-verification'),
      ),
      groupsForm,
      el('details', {},
        el('summary', {}, t('Delete this account')),
        el('div', {},
          el('p', {}, t('This deletes the account, its sessions, grants, passkeys and second factor. It cannot be undone.')),
          action(t('Delete for good'), 'danger', async () => {
            await call('DELETE', path)
            location.hash = '#/users'
            announce(t('The account was deleted.'))
          }, 'delete'),
        ),
      ),
      el('h2', {}, t('Second factor and passkeys')),
      el('dl', { id: 'second-factor' },
        el('dt', {}, t('Authenticator app')), el('dd', {}, sf.totp ? t('Set up on %s', when(sf.enrolled_at)) : t('None')),
        el('dt', {}, t('Recovery codes left')), el('dd', {}, sf.recovery_codes_left),
      ),
      sf.totp || sf.recovery_codes_left
        ? el('div', { class: 'actions' }, action(t('Reset second factor'), 'secondary', async () => {
          const r = await call('DELETE', path + '/mfa')
          return r.removed ? t('The second factor and its recovery codes were removed.') : t('The account had no second factor.')
        }, 'reset-mfa'))
        : null,
      el('div', { id: 'passkeys' }, table(t('Passkeys'), [
        { label: t('Name'), cell: (k) => k.name },
        { label: t('Added'), cell: (k) => when(k.created_at) },
        { label: t('Last used'), cell: (k) => (k.last_used_at ? when(k.last_used_at) : t('never')) },
        { label: t('Synced'), cell: (k) => yes(k.synced) },
        { label: t('Action'), cell: (k) => action(t('Remove'), 'secondary', async () => {
          await call('DELETE', path + '/passkeys/' + encodeURIComponent(k.id))
          return t('The passkey %s was removed.', k.name)
        }, undefined, { 'aria-label': t('Remove the passkey %s', k.name), 'data-passkey': k.id }) },
      ], factors.passkeys, t('No passkeys.'))),
      el('h2', {}, t('Sessions')),
      table(t('Sessions'), [
        { label: t('Signed in'), cell: (s) => when(s.signed_in_at) },
        { label: t('Last used'), cell: (s) => when(s.last_used_at) },
        { label: t('Expires'), cell: (s) => when(s.expires_at) },
        { label: t('Method'), cell: (s) => s.amr.join(', ') || '—' },
        { label: t('Browser'), cell: (s) => (s.user_agent ? el('span', { class: 'id' }, s.user_agent) : '—') },
      ], sessions.sessions, t('No sessions.')),
      el('h2', {}, t('Apps with access')),
      table(t('Apps with access'), [
        { label: t('Client'), cell: (g) => g.client_id },
        { label: t('Scopes'), cell: (g) => g.scopes.join(' ') },
        { label: t('Signed in'), cell: (g) => when(g.signed_in_at) },
        { label: t('Last used'), cell: (g) => when(g.last_used_at) },
        { label: t('Refresh token'), cell: (g) => yes(g.offline) },
      ], grants.grants, t('No app has access.')),
      el('h2', {}, t('History')),
      eventsTable(events.events),
      el('p', {}, el('a', { href: '#/audit' + query({ user: id }) }, t('Every event of this account'))),
    )
  }

  function eventsTable(events) {
    return table(t('Events'), [
      { label: t('Time'), cell: (e) => when(e.time) },
      { label: t('Event'), cell: (e) => e.kind },
      { label: t('Outcome'), cell: (e) => (e.outcome === 'success' ? t('success') : el('span', { class: 'badge bad' }, t('failure'))) },
      { label: t('Account'), cell: (e) => (e.user ? el('a', { href: '#/users/' + encodeURIComponent(e.user), class: 'id' }, e.user) : '—') },
      { label: t('Client'), cell: (e) => e.client || '—' },
      { label: t('By'), cell: (e) => e.actor || '—' },
      { label: t('Address'), cell: (e) => e.addr || '—' },
      { label: t('Reason'), cell: (e) => e.reason || '—' },
    ], events, t('No events.'))
  }

  async function auditPage(params) {
    const fields = [
      ['user', t('User ID')],
      ['kind', t('Kinds'), t('Comma-separated, e.g. signin, user.*')],
      ['since', t('Since'), t('A date, a time (RFC 3339) or a duration ago: 24h, 7d')],
      ['until', t('Until')],
    ]
    const inputs = {}
    const form = el(
      'form',
      { onsubmit: (ev) => {
        ev.preventDefault()
        const f = {}
        for (const [k] of fields) f[k] = inputs[k].value.trim()
        location.hash = '#/audit' + query(f)
      } },
      fields.map(([k, label, hint]) => {
        inputs[k] = el('input', { id: 'f-' + k, name: k, value: params.get(k) || '', autocomplete: 'off', 'aria-describedby': hint ? 'h-' + k : undefined })
        return el('div', { class: 'field' }, el('label', { for: 'f-' + k }, label), inputs[k], hint ? el('p', { class: 'hint', id: 'h-' + k }, hint) : null)
      }),
      el('button', { type: 'submit' }, t('Filter')),
    )
    show('audit', t('Audit trail'), form, el('p', { class: 'muted' }, t('Loading…')))
    const filter = {}
    for (const [k] of fields) filter[k] = params.get(k) || ''
    const list = el('div', { id: 'events' })
    const more = el('button', { type: 'button', class: 'secondary', hidden: true }, t('Older events'))
    const rows = []
    let cursor = ''
    const load = async () => {
      const page = await call('GET', '/audit' + query({ ...filter, cursor, limit: '50' }))
      rows.push(...page.events)
      cursor = page.next_cursor || ''
      more.hidden = !cursor
      list.replaceChildren(eventsTable(rows))
    }
    more.onclick = () => load().catch((e) => list.append(alertBox(e)))
    try {
      await load()
    } catch (e) {
      show('audit', t('Audit trail'), form, alertBox(e))
      return
    }
    show('audit', t('Audit trail'), form, list, more)
  }

  async function clientsPage() {
    show('clients', t('Clients'), el('p', { class: 'muted' }, t('Loading…')))
    const { clients } = await call('GET', '/clients')
    const list = (l) => (l.length ? el('span', { class: 'id' }, l.join(' ')) : '—')
    show(
      'clients',
      t('Clients'),
      el('p', { class: 'muted' }, t('The apps registered in the configuration in force (auth.clients). Secrets are never shown.')),
      table(t('Clients'), [
        { label: t('Client ID'), cell: (c) => el('code', {}, c.client_id) },
        { label: t('Name'), cell: (c) => c.name },
        { label: t('Type'), cell: (c) => (c.public ? t('public (PKCE)') : c.token_endpoint_auth_method) },
        { label: t('Grant types'), cell: (c) => list(c.grant_types) },
        { label: t('Scopes'), cell: (c) => list(c.scopes) },
        { label: t('Redirect URIs'), cell: (c) => list(c.redirect_uris) },
        { label: t('APIs'), cell: (c) => list(c.audiences) },
      ], clients, t('No clients are registered.')),
    )
  }

  // ---- routing --------------------------------------------------------------------------------------

  async function route() {
    stopPolling()
    const [path, search] = (location.hash.replace(/^#/, '') || '/').split('?')
    const params = new URLSearchParams(search || '')
    const parts = path.split('/').filter(Boolean)
    try {
      if (parts[0] === 'users' && parts[1]) await userPage(decodeURIComponent(parts[1]))
      else if (parts[0] === 'users') await usersPage(params)
      else if (parts[0] === 'audit') await auditPage(params)
      else if (parts[0] === 'clients') await clientsPage()
      else if (parts[0] === 'forms' && parts[1] && parts[2] === 'submissions' && parts[3]) await submissionPage(decodeURIComponent(parts[1]), decodeURIComponent(parts[3]))
      else if (parts[0] === 'forms' && parts[1] && parts[2] === 'dead-letters') await deadLettersPage(decodeURIComponent(parts[1]))
      else if (parts[0] === 'forms' && parts[1] === 'waitlist') await waitlistPage(params)
      else if (parts[0] === 'forms' && parts[1]) await submissionsPage(decodeURIComponent(parts[1]), params)
      else if (parts[0] === 'forms') await formsPage()
      else await homePage()
    } catch (e) {
      if (e instanceof APIError && e.status === 401) return showSignedOut(e)
      show('error', t('Something went wrong'), alertBox(e))
    }
    focusTitle()
  }

  async function start() {
    if (location.pathname.endsWith('/callback')) {
      try {
        const r = await auth.handleRedirectCallback()
        history.replaceState(null, '', home + (r.returnTo || ''))
      } catch (e) {
        history.replaceState(null, '', home)
        return showSignedOut(e)
      }
    }
    if (!(await auth.isAuthenticated())) return showSignedOut()
    const user = await auth.getUser()
    $('who-email').textContent = (user && (user.email || user.sub)) || ''
    $('who').hidden = false
    let me
    try {
      me = await call('GET', '/whoami')
    } catch (e) {
      if (e instanceof APIError && e.status === 403) return showNotAdmin((user && user.email) || '')
      return showSignedOut(e)
    }
    main.dataset.sub = me.sub
    $('nav').hidden = false
    window.addEventListener('hashchange', route)
    await route()
  }

  $('sign-out').addEventListener('click', () => auth.signOut())
  start().catch((e) => showSignedOut(e))
})()
