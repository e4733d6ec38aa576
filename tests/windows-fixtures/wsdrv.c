/* wsdrv: a second, small freestanding image (a "driver" for the module-list tests). */
typedef unsigned long ULONG;

typedef struct _WS_DRIVER_STATE {
  ULONG Loaded;
  ULONG Calls;
} WS_DRIVER_STATE;

__declspec(dllexport) WS_DRIVER_STATE WsDriverState = {1, 0};

__declspec(dllexport) ULONG WsDriverCall(ULONG v) {
  WsDriverState.Calls += v;
  return WsDriverState.Calls;
}
