import { describe, expect, it } from 'vitest';
import { addressKey, throttleKeys, userDelayMs, USER_DELAY_MAX_MS, USER_SLOW_AFTER } from '../../src/lib/server/auth/login-throttle';

describe('login throttle keys and delay', () => {
	it('counts IPv4 as is, IPv6 by its /64, IPv4-mapped IPv6 as IPv4', () => {
		expect(addressKey('192.0.2.1')).toBe('192.0.2.1');
		expect(addressKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
		expect(addressKey('2001:db8:1:2::a')).toBe('2001:db8:1:2::/64');
		expect(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe(addressKey('2001:db8:1:2::1'));
		expect(addressKey('2001:db8:1:3::1')).not.toBe(addressKey('2001:db8:1:2::1'));
		expect(addressKey('not an address')).toBe('not an address');
	});

	it('keys a pair, an address and a username, case-insensitively', () => {
		expect(throttleKeys(' Admin ', '192.0.2.1')).toEqual({ pair: 'pair:admin|192.0.2.1', address: 'addr:192.0.2.1', user: 'user:admin' });
	});

	it('the username’s delay starts late, doubles and is bounded', () => {
		expect(userDelayMs(0)).toBe(0);
		expect(userDelayMs(USER_SLOW_AFTER - 1)).toBe(0);
		expect(userDelayMs(USER_SLOW_AFTER)).toBe(100);
		expect(userDelayMs(USER_SLOW_AFTER + 1)).toBe(200);
		expect(userDelayMs(USER_SLOW_AFTER + 100)).toBe(USER_DELAY_MAX_MS);
		expect(userDelayMs(Number.MAX_SAFE_INTEGER)).toBe(USER_DELAY_MAX_MS);
	});
});
