/** Where the SDK keeps its state; the subset of the Web Storage API it uses. */
export interface KeyValueStore {
  getItem(key: string): string | null
  setItem(key: string, value: string): void
  removeItem(key: string): void
}

/** A store that lives as long as the page: nothing survives a reload, nothing is shared. */
export function memoryStore(): KeyValueStore {
  const m = new Map<string, string>()
  return {
    getItem: (k) => m.get(k) ?? null,
    setItem: (k, v) => void m.set(k, v),
    removeItem: (k) => void m.delete(k),
  }
}

/**
 * sessionStorage or localStorage when the page may use it, else undefined (server-side rendering,
 * storage disabled by the user, sandboxed frames throw on access).
 */
export function webStore(kind: 'session' | 'local'): KeyValueStore | undefined {
  try {
    const s = globalThis[kind === 'local' ? 'localStorage' : 'sessionStorage']
    s.getItem('sac')
    return s
  } catch {
    return undefined
  }
}

/** Reads JSON, treating anything unreadable as absent (another version's or a hand-edited value). */
export function readJson<T>(s: KeyValueStore, key: string): T | undefined {
  try {
    return JSON.parse(s.getItem(key) as string) ?? undefined
  } catch {
    return undefined
  }
}

/** Writes JSON (undefined removes the key); false when the store refused (quota, storage disabled). */
export function writeJson(s: KeyValueStore, key: string, value: unknown): boolean {
  try {
    if (value === undefined) s.removeItem(key)
    else s.setItem(key, JSON.stringify(value))
    return true
  } catch {
    return false
  }
}
