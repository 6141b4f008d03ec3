/*
 * A test fixture, never shipped: Wine 8.0 has no ProcessPrng in its
 * bcryptprimitives.dll, which Rust's standard library imports on Windows
 * for its random numbers (HashMap seeds). Beside the .exe, this DLL gives
 * it, forwarding to RtlGenRandom (advapi32's SystemFunction036), which
 * Wine has. Built by scripts/wine-test with mingw-w64.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
