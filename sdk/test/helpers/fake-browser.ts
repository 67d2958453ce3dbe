// The browser globals the SDK uses, for unit tests in Node: location, history, web storage, document
// visibility, Web Locks. BroadcastChannel and Web Crypto are Node's real ones. Browser tests run the SDK
// in real Chromium.

/** Web Storage backed by a Map; `full` makes setItem throw like a quota error. */
export class MemoryStorage {
  items = new Map<string, string>()
  full = false
  get length() {
    return this.items.size
  }
  key(i: number) {
    return [...this.items.keys()][i] ?? null
  }
  getItem(k: string) {
    return this.items.get(k) ?? null
  }
  setItem(k: string, v: string) {
    if (this.full) throw new DOMException('quota exceeded', 'QuotaExceededError')
    this.items.set(k, String(v))
  }
  removeItem(k: string) {
    this.items.delete(k)
  }
  clear() {
    this.items.clear()
  }
  /** Everything stored, as one string, to search for tokens. */
  dump() {
    return JSON.stringify([...this.items])
  }
}

export class FakeLocation {
  href: string
  /** URLs passed to assign(): where the SDK sent the browser. */
  assigned: string[] = []
  constructor(href: string) {
    this.href = href
  }
  get url() {
    return new URL(this.href)
  }
  get origin() {
    return this.url.origin
  }
  get pathname() {
    return this.url.pathname
  }
  get search() {
    return this.url.search
  }
  get hash() {
    return this.url.hash
  }
  assign(url: string) {
    this.assigned.push(String(url))
  }
}

/** A form the page submitted: where, how, and its fields. */
export interface SubmittedForm {
  method: string
  action: string
  fields: Record<string, string>
}

export class FakeDocument extends EventTarget {
  visibilityState: 'visible' | 'hidden' = 'visible'
  submitted: SubmittedForm[] = []
  body = { children: [] as unknown[], append: (c: unknown) => void this.body.children.push(c) }
  createElement(tag: string): any {
    const doc = this
    const el = {
      tagName: tag.toUpperCase(),
      children: [] as { name: string; value: string; type: string }[],
      method: 'get',
      action: '',
      append(c: { name: string; value: string; type: string }) {
        el.children.push(c)
      },
      submit() {
        if (!doc.body.children.includes(el)) throw new Error('a form must be in the document to be submitted')
        doc.submitted.push({ method: el.method, action: el.action, fields: Object.fromEntries(el.children.map((c) => [c.name, c.value])) })
      },
    }
    return el
  }
  setVisibility(v: 'visible' | 'hidden') {
    this.visibilityState = v
    this.dispatchEvent(new Event('visibilitychange'))
  }
}

/** A minimal exclusive Web Locks LockManager: one holder per name, waiters in order. */
export class FakeLocks {
  private tails = new Map<string, Promise<unknown>>()
  requests = 0
  request<T>(name: string, cb: () => Promise<T>): Promise<T> {
    this.requests++
    const prev = this.tails.get(name) ?? Promise.resolve()
    const run = prev.then(() => cb())
    this.tails.set(
      name,
      run.catch(() => {}),
    )
    return run
  }
}

export interface Tab {
  sessionStorage: MemoryStorage
  document: FakeDocument
}

const names = ['location', 'history', 'sessionStorage', 'localStorage', 'document', 'navigator', 'BroadcastChannel'] as const

/**
 * Installs a fake browser window on globalThis. newTab() and duplicateTab() switch sessionStorage and
 * document to a new tab's (construct a client after it); localStorage, locks and the BroadcastChannel are
 * shared by all tabs, as in one browser profile. restore() closes every channel and removes the globals.
 */
export function installBrowser(href = 'http://127.0.0.1:8080/demo/', opts: { locks?: boolean } = {}) {
  const g = globalThis as any
  const saved = new Map(names.map((n) => [n, Object.getOwnPropertyDescriptor(g, n)]))
  const location = new FakeLocation(href)
  const localStorage = new MemoryStorage()
  const locks = new FakeLocks()
  const channels: BroadcastChannel[] = []
  const RealChannel = g.BroadcastChannel as typeof BroadcastChannel
  class TrackedChannel extends RealChannel {
    constructor(name: string) {
      super(name)
      channels.push(this)
    }
  }
  const tabs: Tab[] = []
  const newTab = (): Tab => {
    const tab = { sessionStorage: new MemoryStorage(), document: new FakeDocument() }
    tabs.push(tab)
    define('sessionStorage', tab.sessionStorage)
    define('document', tab.document)
    return tab
  }
  function define(n: string, value: unknown) {
    Object.defineProperty(g, n, { value, configurable: true, writable: true })
  }
  define('location', location)
  const history = {
    state: null as unknown,
    replaceState(state: unknown, _t: string, url: string) {
      history.state = state
      location.href = new URL(url, location.href).href
    },
  }
  define('history', history)
  define('localStorage', localStorage)
  define('navigator', opts.locks === false ? {} : { locks })
  define('BroadcastChannel', TrackedChannel)
  const first = newTab()
  /** What a browser's "Duplicate tab" does: a new tab that starts with a copy of the tab's sessionStorage. */
  const duplicateTab = (of: Tab = first): Tab => {
    const tab = newTab()
    for (const [k, v] of of.sessionStorage.items) tab.sessionStorage.setItem(k, v)
    return tab
  }
  return {
    location,
    localStorage,
    locks,
    tabs,
    firstTab: first,
    newTab,
    duplicateTab,
    /** Makes a tab current again (its sessionStorage and document), e.g. before constructing its client. */
    switchTo(tab: Tab) {
      define('sessionStorage', tab.sessionStorage)
      define('document', tab.document)
    },
    restore() {
      for (const c of channels) c.close()
      for (const [n, d] of saved) {
        if (d) Object.defineProperty(g, n, d)
        else delete g[n]
      }
    },
  }
}

export type FakeBrowser = ReturnType<typeof installBrowser>

/** Lets queued BroadcastChannel messages and promise chains run. */
export const settle = (ms = 20) => new Promise((r) => setTimeout(r, ms))
