BUFFER_NUM = 1  # one buffer per queue: the pipes take turns


def add_kernel(x, y, z, tiling):
    blockLength = tiling.blockLength
    tileNum = tiling.tileNum
    tileLength = blockLength // tileNum // BUFFER_NUM
    offset = blockLength * GetBlockIdx()
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    zGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x + offset, blockLength)
    yGm.SetGlobalBuffer(y + offset, blockLength)
    zGm.SetGlobalBuffer(z + offset, blockLength)
    pipe = TPipe()
    inQueueX = TQue(TPosition.VECIN, BUFFER_NUM)
    inQueueY = TQue(TPosition.VECIN, BUFFER_NUM)
    outQueueZ = TQue(TPosition.VECOUT, BUFFER_NUM)
    pipe.InitBuffer(inQueueX, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(inQueueY, BUFFER_NUM, tileLength * 2)
    pipe.InitBuffer(outQueueZ, BUFFER_NUM, tileLength * 2)
    for i in range(tileNum * BUFFER_NUM):
        # CopyIn
        xLocal = inQueueX.AllocTensor(half)
        yLocal = inQueueY.AllocTensor(half)
        DataCopy(xLocal, xGm[i * tileLength], tileLength)
        DataCopy(yLocal, yGm[i * tileLength], tileLength)
        inQueueX.EnQue(xLocal)
        inQueueY.EnQue(yLocal)
        # Compute
        xLocal = inQueueX.DeQue(half)
        yLocal = inQueueY.DeQue(half)
        zLocal = outQueueZ.AllocTensor(half)
        Add(zLocal, xLocal, yLocal, tileLength)
        outQueueZ.EnQue(zLocal)
        inQueueX.FreeTensor(xLocal)
        inQueueY.FreeTensor(yLocal)
        # CopyOut
        zLocal = outQueueZ.DeQue(half)
        DataCopy(zGm[i * tileLength], zLocal, tileLength)
        outQueueZ.FreeTensor(zLocal)
