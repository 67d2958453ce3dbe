/** Where the SDK keeps its state; the subset of the Web Storage API it uses. */
export interface KeyValueStore {
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
    removeItem(key: string): void;
}
/** A store that lives as long as the page: nothing survives a reload, nothing is shared. */
export declare function memoryStore(): KeyValueStore;
/**
 * sessionStorage or localStorage when the page may use it, else undefined (server-side rendering,
 * storage disabled by the user, sandboxed frames throw on access).
 */
export declare function webStore(kind: 'session' | 'local'): KeyValueStore | undefined;
/** Reads JSON, treating anything unreadable as absent (another version's or a hand-edited value). */
export declare function readJson<T>(s: KeyValueStore, key: string): T | undefined;
/** Writes JSON (undefined removes the key); false when the store refused (quota, storage disabled). */
export declare function writeJson(s: KeyValueStore, key: string, value: unknown): boolean;
