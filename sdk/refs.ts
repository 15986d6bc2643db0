/**
 * Typed names of what a plugin offers others: services, extension points, hook points and
 * events. Each plugin's public contract module in the sdk (sdk/models.ts, sdk/masking.ts,
 * sdk/streams.ts...) declares its refs with these; this module imports nothing, so a contract
 * module never forms an import cycle with the sdk's plugin interfaces. (Plain JavaScript plugins
 * may pass the id string.)
 */

/** A typed name of a service: `createServiceRef<ModelsService>('models')`. */
export interface ServiceRef<T> {
  readonly id: string;
  /** Type carrier only (never set). */
  readonly __type?: T;
}

export function createServiceRef<T>(id: string): ServiceRef<T> {
  return Object.freeze({ id });
}

/** A typed name of an extension point, `<owner plugin>.<name>`: `createExtensionPoint<MaskingMethod>('masking.methods')`. */
export interface ExtensionPointRef<T> {
  readonly id: string;
  /** Type carrier only (never set). */
  readonly __type?: T;
}

export function createExtensionPoint<T>(id: string): ExtensionPointRef<T> {
  return Object.freeze({ id });
}

/**
 * A hook point a plugin declares in its manifest's `contributes.hookPoints` (named
 * `<plugin>.<point>`), typed for both sides: `export const AFTER_MODEL_BUILD = createHookRef<[ModelBuildContext]>('models.afterModelBuild')`.
 * The ref lives in the owner's contract module of the sdk, where the owner and its tappers import it.
 */
export interface HookRef<A extends unknown[] = unknown[], R = void> {
  readonly id: string;
  /** Type carrier only (never set). */
  readonly __signature?: (...args: A) => R;
}

export function createHookRef<A extends unknown[], R = void>(id: string): HookRef<A, R> {
  return Object.freeze({ id });
}

/**
 * A typed name of an event on the bus (`ctx.events`), declared in the contract module of the
 * plugin that emits it (the kernel's in sdk/db.ts and sdk/config.ts):
 * `export const MODEL_END = createEventRef<ModelEndEvent>('model_end')`. `ctx.events.emit(ref,
 * payload)` and `ctx.events.on(ref, listener)` are then typed by it. The name is the event's
 * type on the bus and on the wire, so a listener that passes the plain string (a JavaScript
 * plugin, an SSE relay, `*`) sees the same event.
 */
export interface EventRef<P extends object = Record<string, unknown>> {
  readonly id: string;
  /** Type carrier only (never set). */
  readonly __payload?: P;
}

export function createEventRef<P extends object>(name: string): EventRef<P> {
  return Object.freeze({ id: name });
}
