/**
 * Where the lean S3 client's keys come from: AWS's standard chain, cached, refreshed before expiry.
 *
 *   AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY set, AWS_PROFILE not  →  those keys (+ AWS_SESSION_TOKEN),
 *                                                                      no SDK module loaded
 *   otherwise → @aws-sdk/credential-provider-node's defaultProvider (loaded then, with import()):
 *               environment, SSO, profile, process, web identity, ECS, IMDS — the SDK's own order
 *
 * The shortcut is the chain's own first link (the chain reads the environment first unless
 * AWS_PROFILE is set), taken without loading the chain's modules.
 *
 * `CachedCredentials` keeps the last credentials and fetches again `refreshBeforeMs` before they
 * expire (5 minutes, as the SDK does), one fetch at a time; a failed refresh keeps the old
 * credentials while they are still valid.
 */
import type { Clock } from '../../core/clock.js';
import type { SigningCredentials } from './sigv4.js';

export interface Credentials extends SigningCredentials {
  /** When they stop working; none for long-term keys. */
  expiration?: Date;
}

export type CredentialSource = () => Promise<Credentials>;

/** The environment's keys when the chain would take them, else the SDK's default chain. */
export function defaultCredentialSource(env: NodeJS.ProcessEnv = process.env): CredentialSource {
  const id = env.AWS_ACCESS_KEY_ID;
  const secret = env.AWS_SECRET_ACCESS_KEY;
  if (id && secret && !env.AWS_PROFILE) {
    const credentials: Credentials = { accessKeyId: id, secretAccessKey: secret };
    if (env.AWS_SESSION_TOKEN) credentials.sessionToken = env.AWS_SESSION_TOKEN;
    if (env.AWS_CREDENTIAL_EXPIRATION) credentials.expiration = new Date(env.AWS_CREDENTIAL_EXPIRATION);
    return async () => credentials;
  }
  let chain: Promise<CredentialSource> | undefined;
  return async () => {
    chain ??= import('@aws-sdk/credential-provider-node').then(({ defaultProvider }) => {
      const provider = defaultProvider();
      return () => provider();
    });
    return (await chain)();
  };
}

export class CachedCredentials {
  private current: Credentials | undefined;
  private fetching: Promise<Credentials> | undefined;

  constructor(
    private readonly source: CredentialSource,
    private readonly clock: Clock,
    private readonly refreshBeforeMs = 300_000,
  ) {}

  /** Valid credentials: the cached ones unless they expire within refreshBeforeMs. */
  get(): Credentials | Promise<Credentials> {
    const current = this.current;
    if (current && !this.expiring(current, this.refreshBeforeMs)) return current;
    return this.refresh();
  }

  private expiring(c: Credentials, withinMs: number): boolean {
    return c.expiration !== undefined && c.expiration.getTime() - this.clock.now() <= withinMs;
  }

  private refresh(): Promise<Credentials> {
    this.fetching ??= this.source().then(
      (fresh) => {
        this.fetching = undefined;
        this.current = fresh;
        return fresh;
      },
      (e: unknown) => {
        this.fetching = undefined;
        const old = this.current;
        if (old && !this.expiring(old, 0)) return old;
        throw e;
      },
    );
    return this.fetching;
  }
}
