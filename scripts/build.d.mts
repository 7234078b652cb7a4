/** Types of scripts/build.mjs (plain JavaScript, so that it runs without tsx). */
export declare const ROOT: string;
export declare const DIST: string;
export declare function outputs(dir?: string): { server: string; coord: string };
export declare function isFresh(dir?: string): boolean;
export declare function build(dir?: string, root?: string, only?: ('server' | 'coord')[]): Promise<{ server: string; coord: string }>;
export declare function ensureBuilt(): Promise<{ server: string; coord: string }>;
